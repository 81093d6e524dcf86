# all_reduce time vs size, ring and tree, per node count. Called by tb/ring_vs_tree.c:
#   gnuplot -e "datafile='reports/ring_vs_tree.dat'; outfile='reports/ring_vs_tree.png'; nodes='1 2 4 8'" scripts/plot_ring_vs_tree.gp
# The data file has one block (gnuplot index) per node count: bytes ring_us tree_us.
if (!exists("datafile")) datafile = 'reports/ring_vs_tree.dat'
if (!exists("outfile")) outfile = 'reports/ring_vs_tree.png'
if (!exists("nodes")) nodes = '1'
set terminal pngcairo size 900,560 font ",11"
set output outfile
set title "ring_vs_tree: all_reduce time vs size (8 GPUs of a DGX H100 in N nodes)" noenhanced
set xlabel "size (bytes)"
set ylabel "time (us)"
set logscale xy 2
set format x "2^{%L}"
set grid
set key top left
colors = "#1f77b4 #2ca02c #9467bd #ff7f0e #d62728 #8c564b #e377c2 #7f7f7f"
plot for [i=1:words(nodes)] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 dt 1 lc rgb word(colors, i) \
         title sprintf("ring, %s node(s)", word(nodes, i)), \
     for [i=1:words(nodes)] datafile index (i-1) using 1:3 with linespoints lw 2 pt 5 dt 2 lc rgb word(colors, i) \
         title sprintf("tree, %s node(s)", word(nodes, i))
