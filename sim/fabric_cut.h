/* A fabric's packets across MPI ranks (sim/fabric.c's ranked build): the
 * sim_pdes codec of a cut link direction. A packet crosses as its common
 * fields and its extension; the receiving rank makes it again from a pool of
 * the cut's own (the receiving half stands in for the remote sender as the
 * packet's owner here), once for all the parts it travels in, and the sending
 * rank gives the original back to its pool when its last part has gone. The
 * owning model's data pointer cannot cross: a packet carrying one is refused. */
#ifndef SIM_FABRIC_CUT_H
#define SIM_FABRIC_CUT_H

#include "sim/packet.h"
#include "sim/pdes.h"

typedef struct sim_fabric_cut_rx sim_fabric_cut_rx;

/* The codec of a sending direction (stateless). */
const sim_pdes_codec *sim_fabric_cut_send_codec(void);
/* A receiving direction's state and codec (owner names the pool). */
sim_fabric_cut_rx *sim_fabric_cut_rx_new(const char *owner);
const sim_pdes_codec *sim_fabric_cut_rx_codec(sim_fabric_cut_rx *rx);
/* After every packet is back (sim_fabric_free's order). */
void sim_fabric_cut_rx_free(sim_fabric_cut_rx *rx);

#endif
