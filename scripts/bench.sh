#!/bin/sh
# make bench: every benchmark, one after another on this machine, each writing
# its object into reports/bench.json. Compare ratios within one run: the
# machine is shared and absolute numbers move between runs.
#   scripts/bench.sh BUILD_DIR
# Exits non-zero if any benchmark fails or any comparison listed below is
# missing from reports/bench.json (bench/bench_check.c names each one): a
# comparison that cannot run is a failure, never a silent gap.
set -u
build=${1:-build}
bin=$build/bin
mkdir -p reports
# A fresh file: an object left from an earlier run must not stand in for one
# this run failed to write.
rm -f reports/bench.json
status=0
run() {   # run NAME COMMAND...
  name=$1; shift
  echo "== bench $name"
  if ! "$@"; then echo "bench $name: FAILED" >&2; status=1; fi
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
run kernel_ring "$bin/bench_report" "$bin"
# Model benchmarks register here as they land (each writes its own object,
# and lists its comparisons in `expect` below).
for extra in scripts/bench.d/*.sh; do
  [ -f "$extra" ] || continue
  run "$(basename "$extra" .sh)" sh "$extra" "$build"
done
echo "reports/bench.json:"
cat reports/bench.json 2>/dev/null
# Every comparison bench.json must hold, by object.
#   kernel_ring: our kernel vs SystemC on the same ring (bench_report)
#   nvswitch:    component and core speed vs the target; peak RSS at 200k and 2M cycles
#   pcie_bw, cxl_random: model speed (pcie_bw vs its target)
#   fabric:      packet hops per second on fattree:8, peak RSS flat in run length
#   rtl_switch:  Verilated crossbar, bare and inside the component (overheads)
#   parallel:    sweep overhead per point beyond the run itself; fattree:16 over 2 ranks vs one process
#   server:      8-GPU server h2d copies: data TLPs per second through two PCIe hops
#   network:     64:1 RoCE incast and 128-host RoCE all-to-all: data packets per second, the slower of the two vs 5 M
#   collective:  64 MiB ring all_reduce on 128 GPUs (dgx-h100 nodes=16) at packet level: wall vs the 5 s target
expect="
kernel_ring:events_per_s_timed,events_per_s_delta,systemc_events_per_s_timed,systemc_events_per_s_delta,ratio_timed,ratio_delta,simtime_equal,ratio_timed_cpu,ratio_delta_cpu,targets_met
nvswitch:port_cycles_per_s,core_port_cycles_per_s,target_port_cycles_per_s,component_throughput,core_throughput,peak_rss_mb_200k,peak_rss_mb_2M,peak_rss_ratio_2M_to_200k,peak_rss_agree
pcie_bw:tlps_per_s,target_tlps_per_s
cxl_random:ops_per_s
fabric:pkt_hops_per_s,pkts_per_s,pkt_hops_per_cpu_s,loop_pkt_hops_per_cpu_s,peak_rss_mb,peak_rss_flat,target_pkt_hops_per_s
rtl_switch:cycles_per_s,cycles_per_s_traced,model_tl_cycles_per_s,model_rtl_cycles_per_s,model_both_cycles_per_s,model_rtl_overhead,model_both_overhead,model_rtl_overhead_packets
parallel:sweep_points,sweep_overhead_ms_per_point,target_sweep_overhead_ms_per_point,speedup,target_speedup,speedup_target_met,same_results
server:tlps_per_s,GB_per_wall_s,wall_s,target_tlps_per_s
network:pkts_per_s,incast_pkts_per_s,incast_wall_s,alltoall_pkts_per_s,alltoall_wall_s,target_pkts_per_s,target_met
collective:wall_s,pkts_per_s,peak_rss_mb,target_wall_s,target_met
"
if [ -x "$bin/bench_check" ]; then
  # shellcheck disable=SC2086
  "$bin/bench_check" reports/bench.json $expect || status=1
else
  echo "bench: $bin/bench_check not built: the comparisons cannot be checked" >&2
  status=1
fi
[ $status = 0 ] || echo "make bench: FAILED (see the messages above)" >&2
exit $status
