/* Everything a model or test needs from the kernel library. */
#ifndef SIM_SIM_H
#define SIM_SIM_H
#include "sim/kernel.h"
#include "sim/signal.h"
#include "sim/clock.h"
#include "sim/link.h"
#include "sim/tlm.h"
#include "sim/stats.h"
#include "sim/trace.h"
#include "sim/rng.h"
#include "sim/alloc.h"
#include "sim/ring.h"
#include "sim/params.h"
#include "sim/report.h"
#include "sim/runner.h"
#endif
