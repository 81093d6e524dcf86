# Rate vs time of every flow for dcqcn_converge. Called by the test (tb/dcqcn_converge.c):
#   gnuplot -e "datafile='reports/dcqcn_converge.dat'; outfile='reports/dcqcn_converge.png'; \
#               nflows=2; fair=46.3; title_text='...'" scripts/plot_dcqcn_converge.gp
if (!exists("datafile")) datafile = 'reports/dcqcn_converge.dat'
if (!exists("outfile")) outfile = 'reports/dcqcn_converge.png'
if (!exists("title_text")) title_text = ''
if (!exists("nflows")) nflows = 2
set terminal pngcairo size 1000,560 font ",11"
set output outfile
set title sprintf("DCQCN convergence on one bottleneck (%s)", title_text) noenhanced
set xlabel "time (us)"
set ylabel "rate (Gb/s)"
set grid
set key outside right
# columns: time, goodput of each flow, then the limiter's Rc of each flow
plot for [i=1:nflows] datafile using 1:(column(1+i)) with lines lw 2 title sprintf("flow %d goodput", i-1), \
     for [i=1:nflows] datafile using 1:(column(1+nflows+i)) with lines lw 1 dt 2 title sprintf("flow %d Rc (wire)", i-1), \
     fair with lines lw 1 dt 3 lc rgb "#444444" title "fair share (payload)"
