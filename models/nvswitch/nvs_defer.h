/* Deferred delivery of an nvswitch's input links (internal to
 * models/nvswitch; see sim/link.h, "Deferred delivery").
 *
 * A flit or packet on an input link is presented at the first edge after its
 * arrival, never earlier (nvswitch.c, present), and sw_recv stages it as of
 * its arrival time. So the switch may take it at that edge instead of at its
 * arrival, with the same outcome, as long as it is clocked then: it promises
 * the links to stay clocked until defer_until_ps. That saves each message
 * its own kernel wake-up of the link's delivery. nvswitch_cfg.no_defer is
 * the plain path (tests/check_nvswitch.c compares the two). */
#ifndef NVS_DEFER_H
#define NVS_DEFER_H

#include "models/nvswitch/nvswitch.h"

/* The link's judge: every message may wait (which do is the link's business:
 * those arriving before the promise runs out). */
bool nvs_defer_judge(void *ctx, sim_link *l, const void *msg);
/* At the start of a cycle: the input messages that arrived by now, port by port. */
void nvs_defer_take(nvswitch *s);
/* At the end of a cycle (busy: the switch holds something): whether to stay clocked. */
bool nvs_defer_keep_promise(nvswitch *s, sim_time_ps now, bool busy);

#endif
