# The communication wall (tb/comm_wall.c writes the data):
#   gnuplot -e "datafile='reports/comm_wall.dat'; outfile='reports/comm_wall.png'; series='baseline overlap'" scripts/plot_comm_wall.gp
# columns: gpus step_ms compute_ms exposed_comm_ms scaling_efficiency; one block per series, in the order of `series`
if (!exists("datafile")) datafile = 'reports/comm_wall.dat'
if (!exists("outfile")) outfile = 'reports/comm_wall.png'
if (!exists("series")) series = 'baseline'
set terminal pngcairo size 1100,820 font ",10"
set output outfile
set multiplot layout 2,1 title "comm_wall: one training step per GPU count, the same work per GPU (weak scaling)" noenhanced
set logscale x 2
set grid
set key outside right top noenhanced
set ylabel "time per step (ms)"
set yrange [0:*]
plot for [i=1:words(series)] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 title word(series, i)." step", \
     datafile index 0 using 1:3 with lines dt 2 lw 2 lc rgb "#555555" title "compute (baseline)", \
     datafile index 0 using 1:4 with linespoints dt 3 lw 2 pt 6 lc rgb "#d62728" title "exposed communication (baseline)"
set xlabel "GPUs"
set ylabel "scaling efficiency (step at the first point / step)"
set yrange [0:1.05]
plot for [i=1:words(series)] datafile index (i-1) using 1:5 with linespoints lw 2 pt 7 title word(series, i)
unset multiplot
