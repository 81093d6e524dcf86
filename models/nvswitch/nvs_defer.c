/* Deferred delivery of an nvswitch's input links (see nvs_defer.h). */
#include "models/nvswitch/nvs_defer.h"

bool nvs_defer_judge(void *ctx, sim_link *l, const void *msg)
{
    (void)ctx, (void)l, (void)msg;
    return true;
}

/* Cycles ahead the switch promises to stay clocked while busy (renewed every
 * half of it): past the link latency, so that busy inputs' messages all wait. */
#define NVS_DEFER_CYCLES 64

void nvs_defer_take(nvswitch *s)
{
    for (int i = 0; i < s->n; i++)
        if (sim_link_in_flight(s->port[i].in)) sim_link_take_arrived(s->port[i].in);
}

/* While busy, keep the promise NVS_DEFER_CYCLES ahead. Idle, stay clocked
 * until it has run out while a message is on its way (it may be waiting);
 * with none, take the promise back and sleep as the plain path would (so the
 * core is stepped through the same cycles). */
bool nvs_defer_keep_promise(nvswitch *s, sim_time_ps now, bool busy)
{
    const sim_time_ps period = s->cfg.period_ps;
    if (busy) {
        if (s->defer_until_ps < now + NVS_DEFER_CYCLES / 2 * period) {
            s->defer_until_ps = now + NVS_DEFER_CYCLES * period;
            for (int i = 0; i < s->n; i++) sim_link_defer_until(s->port[i].in, s->defer_until_ps);
        }
        return true;
    }
    if (now >= s->defer_until_ps) return false;
    for (int i = 0; i < s->n; i++)
        if (sim_link_in_flight(s->port[i].in)) return true;
    s->defer_until_ps = now;
    for (int i = 0; i < s->n; i++) sim_link_defer_until(s->port[i].in, now);
    return false;
}
