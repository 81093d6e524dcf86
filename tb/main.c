/* build/bin/simrun: runs one registered test (see sim/runner.h). */
#include "sim/runner.h"

int main(int argc, char **argv) { return sim_runner_main(argc, argv); }
