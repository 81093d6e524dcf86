# busbw vs size for nccl_tests. Called by the test (tb/nccl_tests.c):
#   gnuplot -e "datafile='reports/nccl_tests.dat'; outfile='reports/nccl_tests.png'; \
#               bound=400; predicted=400; title_text='all_reduce, ring, simple'" scripts/plot_nccl_tests.gp
if (!exists("datafile")) datafile = 'reports/nccl_tests.dat'
if (!exists("outfile")) outfile = 'reports/nccl_tests.png'
if (!exists("title_text")) title_text = ''
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title sprintf("nccl_tests: bus bandwidth vs size (%s)", title_text) noenhanced
set xlabel "size (bytes)"
set ylabel "busbw (GB/s)"
set logscale x 2
set format x "2^{%L}"
set grid
set key top left
set yrange [0:bound*1.15]
# columns: bytes time_us algbw busbw
plot bound with lines lw 1 dt 2 lc rgb "#888888" title sprintf("NVLink goodput per GPU (%.0f GB/s)", bound), \
     predicted with lines lw 1 dt 3 lc rgb "#d62728" title sprintf("predicted busbw (%.0f GB/s)", predicted), \
     datafile using 1:4 with linespoints lw 2 pt 7 ps 1.0 lc rgb "#1f77b4" title "simulated busbw"
