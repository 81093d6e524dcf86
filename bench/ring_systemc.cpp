// The kernel_ring benchmark written against SystemC (Debian's libsystemc-dev),
// the same program as bench/ring_kernel.c: T tokens circulate in a ring of N
// SC_METHOD processes, each hop a notify(1 ns) (timed) or notify(SC_ZERO_TIME)
// (delta); one process activation = one event; sc_stop() after K events.
// usage: ring_systemc <timed|delta> N K T
#include <systemc>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace sc_core;

static long g_count = 0, g_limit = 0;
static bool g_delta = false;

struct Node : sc_module {
    sc_event ev;
    Node *next = nullptr;
    bool token = false, first = true;
    SC_HAS_PROCESS(Node);
    explicit Node(sc_module_name n) : sc_module(n)
    {
        SC_METHOD(run);
        sensitive << ev;
    }
    void pass()
    {
        if (g_delta) next->ev.notify(SC_ZERO_TIME);
        else next->ev.notify(1, SC_NS);
    }
    void run()
    {
        if (first) {   // the initialisation run: tokens start moving
            first = false;
            if (token) pass();
            return;
        }
        if (++g_count == g_limit) sc_stop();
        pass();
    }
};

int sc_main(int argc, char *argv[])
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: ring_systemc <timed|delta> N K T\n");
        return 2;
    }
    g_delta = !std::strcmp(argv[1], "delta");
    int n = std::atoi(argv[2]);
    g_limit = std::atol(argv[3]);
    int t = std::atoi(argv[4]);
    std::vector<Node *> nodes;
    for (int i = 0; i < n; i++) nodes.push_back(new Node(sc_gen_unique_name("n")));
    for (int i = 0; i < n; i++) {
        nodes[i]->next = nodes[(i + 1) % n];
        nodes[i]->token = (i % (n / t) == 0) && (i / (n / t) < t);
    }
    sc_report_handler::set_actions("/OSCI/SystemC", SC_DO_NOTHING);
    auto t0 = std::chrono::steady_clock::now();
    sc_start();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("systemc mode=%s n=%d tokens=%d events=%ld wall=%.6f rate=%.3f simtime_ps=%llu\n", argv[1], n, t, g_count, s,
                g_count / s / 1e6, (unsigned long long)sc_time_stamp().value());
    return 0;
}
