#include "sim/tlm.h"

#include <string.h>

void sim_tlm_payload_init(sim_tlm_payload *p, enum sim_tlm_command cmd, uint64_t addr, void *data, uint32_t len)
{
    memset(p, 0, sizeof *p);
    p->command = cmd;
    p->address = addr;
    p->data = data;
    p->length = len;
    p->streaming_width = len;
    p->response = SIM_TLM_INCOMPLETE;
}

static unsigned n_extensions;
static const char *extension_names[SIM_TLM_MAX_EXTENSIONS];

unsigned sim_tlm_register_extension(const char *name)
{
    for (unsigned i = 0; i < n_extensions; i++)
        if (!strcmp(extension_names[i], name)) return i;
    if (n_extensions == SIM_TLM_MAX_EXTENSIONS) sim_fatal("too many TLM extensions (max %d)", SIM_TLM_MAX_EXTENSIONS);
    extension_names[n_extensions] = name;
    return n_extensions++;
}

const char *sim_tlm_response_string(enum sim_tlm_response r)
{
    switch (r) {
    case SIM_TLM_OK: return "OK";
    case SIM_TLM_INCOMPLETE: return "INCOMPLETE";
    case SIM_TLM_GENERIC_ERROR: return "GENERIC_ERROR";
    case SIM_TLM_ADDRESS_ERROR: return "ADDRESS_ERROR";
    case SIM_TLM_COMMAND_ERROR: return "COMMAND_ERROR";
    case SIM_TLM_BURST_ERROR: return "BURST_ERROR";
    case SIM_TLM_BYTE_ENABLE_ERROR: return "BYTE_ENABLE_ERROR";
    }
    return "?";
}

void sim_tlm_bind(sim_tlm_socket *s, const char *name, sim_tlm_b_transport_fn fn, void *target)
{
    s->name = name;
    s->b_transport = fn;
    s->target = target;
    s->transactions = 0;
}

void sim_tlm_b_transport(sim_tlm_socket *s, sim_tlm_payload *p, sim_time_ps *delay_ps)
{
    if (!s->b_transport) sim_fatal("TLM socket %s is not bound", s->name ? s->name : "?");
    s->transactions++;
    s->b_transport(s->target, p, delay_ps);
    if (p->response == SIM_TLM_INCOMPLETE)
        sim_fatal("TLM socket %s: target left the response INCOMPLETE", s->name ? s->name : "?");
}

void sim_qk_init(sim_quantum_keeper *qk, sim_kernel *k, sim_time_ps quantum_ps)
{
    qk->k = k;
    qk->quantum_ps = quantum_ps;
    qk->local_ps = 0;
    qk->syncs = 0;
}

bool sim_qk_need_sync(const sim_quantum_keeper *qk)
{
    if (!qk->quantum_ps) return true;
    /* Sync points are aligned to multiples of the quantum (compute_local_quantum). */
    sim_time_ps now = sim_now(qk->k);
    sim_time_ps boundary = (now / qk->quantum_ps + 1) * qk->quantum_ps;
    return now + qk->local_ps >= boundary;
}

void sim_qk_sync(sim_quantum_keeper *qk)
{
    qk->syncs++;
    sim_next_trigger_at(qk->k, qk->local_ps);
    qk->local_ps = 0;
}
