# busbw vs size for nccl_tests. Called by the test (tb/nccl_tests.c):
#   gnuplot -e "datafile='reports/nccl_tests.dat'; outfile='reports/nccl_tests.png'; \
#               bound=400; algos='ring tree'; preds='383 350'; title_text='all_reduce, simple'" scripts/plot_nccl_tests.gp
# The data file has one block (gnuplot index) per algorithm, in the order of algos; preds the predicted busbw of each.
if (!exists("datafile")) datafile = 'reports/nccl_tests.dat'
if (!exists("outfile")) outfile = 'reports/nccl_tests.png'
if (!exists("title_text")) title_text = ''
if (!exists("algos")) algos = 'ring'
if (!exists("preds")) preds = sprintf("%g", exists("predicted") ? predicted : 0)
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title sprintf("nccl_tests: bus bandwidth vs size (%s)", title_text) noenhanced
set xlabel "size (bytes)"
set ylabel "busbw (GB/s)"
set logscale x 2
set format x "2^{%L}"
set grid
set key top left
ymax = bound
do for [i=1:words(preds)] { if (real(word(preds, i)) > ymax) { ymax = real(word(preds, i)) } }   # NVLS's busbw is above the links'
set yrange [0:ymax*1.15]
# columns: bytes time_us algbw busbw
colors = "#1f77b4 #2ca02c #9467bd #ff7f0e #d62728 #8c564b #e377c2 #17becf"   # one per series (up to 8: ring, tree x 3 protocols, nvls)
plot bound with lines lw 1 dt 2 lc rgb "#888888" title sprintf("NVLink goodput per GPU (%.0f GB/s)", bound), \
     for [i=1:words(algos)] real(word(preds, i)) with lines lw 1 dt 3 lc rgb word(colors, i) \
         title sprintf("predicted busbw, %s (%.0f GB/s)", word(algos, i), real(word(preds, i))), \
     for [i=1:words(algos)] datafile index (i-1) using 1:4 with linespoints lw 2 pt 7 ps 1.0 lc rgb word(colors, i) \
         title sprintf("simulated busbw, %s", word(algos, i))
