/* TLM-2.0 style transactions: a generic payload, blocking transport with a
 * time annotation, and a quantum keeper for temporal decoupling. */
#ifndef SIM_TLM_H
#define SIM_TLM_H

#include "sim/kernel.h"

enum sim_tlm_command { SIM_TLM_READ = 0, SIM_TLM_WRITE = 1, SIM_TLM_IGNORE = 2 };
enum sim_tlm_response {
    SIM_TLM_OK = 1, SIM_TLM_INCOMPLETE = 0, SIM_TLM_GENERIC_ERROR = -1, SIM_TLM_ADDRESS_ERROR = -2,
    SIM_TLM_COMMAND_ERROR = -3, SIM_TLM_BURST_ERROR = -4, SIM_TLM_BYTE_ENABLE_ERROR = -5
};

#define SIM_TLM_MAX_EXTENSIONS 8

typedef struct sim_tlm_payload {
    enum sim_tlm_command command;
    uint64_t address;
    unsigned char *data;
    uint32_t length;
    const unsigned char *byte_enable;   /* NULL = all bytes enabled */
    uint32_t byte_enable_length;
    uint32_t streaming_width;           /* 0 = length */
    enum sim_tlm_response response;
    void *extensions[SIM_TLM_MAX_EXTENSIONS];
} sim_tlm_payload;

void sim_tlm_payload_init(sim_tlm_payload *p, enum sim_tlm_command cmd, uint64_t addr, void *data, uint32_t len);
/* Extension ids are handed out once per program, like tlm_extension::ID. */
unsigned sim_tlm_register_extension(const char *name);
static inline void sim_tlm_set_extension(sim_tlm_payload *p, unsigned id, void *ext) { p->extensions[id] = ext; }
static inline void *sim_tlm_get_extension(const sim_tlm_payload *p, unsigned id) { return p->extensions[id]; }
const char *sim_tlm_response_string(enum sim_tlm_response r);

/* Blocking transport: the target adds its latency to *delay_ps and returns. */
typedef void (*sim_tlm_b_transport_fn)(void *target, sim_tlm_payload *p, sim_time_ps *delay_ps);
typedef struct sim_tlm_socket {
    const char *name;
    sim_tlm_b_transport_fn b_transport;
    void *target;
    uint64_t transactions;
} sim_tlm_socket;
void sim_tlm_bind(sim_tlm_socket *s, const char *name, sim_tlm_b_transport_fn fn, void *target);
void sim_tlm_b_transport(sim_tlm_socket *s, sim_tlm_payload *p, sim_time_ps *delay_ps);

/* Quantum keeper (tlm_quantumkeeper): an initiator runs ahead of kernel time
 * by up to a quantum and synchronises at quantum boundaries. Without threads,
 * sync means: re-arm the calling process after the local time offset. */
typedef struct sim_quantum_keeper {
    sim_kernel *k;
    sim_time_ps quantum_ps;
    sim_time_ps local_ps;      /* offset ahead of sim_now() */
    uint64_t syncs;
} sim_quantum_keeper;
void sim_qk_init(sim_quantum_keeper *qk, sim_kernel *k, sim_time_ps quantum_ps);
static inline sim_time_ps sim_qk_local_time(const sim_quantum_keeper *qk) { return qk->local_ps; }
static inline sim_time_ps sim_qk_current_time(const sim_quantum_keeper *qk) { return sim_now(qk->k) + qk->local_ps; }
static inline void sim_qk_set(sim_quantum_keeper *qk, sim_time_ps local_ps) { qk->local_ps = local_ps; }
static inline void sim_qk_inc(sim_quantum_keeper *qk, sim_time_ps d) { qk->local_ps += d; }
/* True once now + local reaches the next quantum boundary (aligned to multiples of the quantum). */
bool sim_qk_need_sync(const sim_quantum_keeper *qk);
/* To be called from inside a running method process: next_trigger after the
 * local offset and reset it. The process resumes at the synchronised time. */
void sim_qk_sync(sim_quantum_keeper *qk);

#endif
