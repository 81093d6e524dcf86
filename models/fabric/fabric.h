/* The fabric's generic component kinds ("switch", "endpoint"). */
#ifndef MODELS_FABRIC_FABRIC_H
#define MODELS_FABRIC_FABRIC_H

/* Registers both with the fabric builder; call before sim_fabric_new (twice is harmless). */
void fabric_register_kinds(void);

#endif
