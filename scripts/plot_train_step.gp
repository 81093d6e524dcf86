# Timeline of one training step (tb/train_step.c writes the data):
#   gnuplot -e "datafile='reports/train_step_timeline.dat'; outfile='reports/train_step_timeline.png'; stages=2" scripts/plot_train_step.gp
# columns: centre_ms row half_width_ms kind (0 forward, 1 backward, 2 tp, 3 pp, 4 dp, 5 wait)
if (!exists("datafile")) datafile = 'reports/train_step_timeline.dat'
if (!exists("outfile")) outfile = 'reports/train_step_timeline.png'
if (!exists("stages")) stages = 1
set terminal pngcairo size 1200,(320+90*stages) font ",10"
set output outfile
set title "train_step: per pipeline stage -- compute (forward, backward), TP all-reduce, PP wait, DP all-reduce" noenhanced
set xlabel "time (ms)"
set ylabel "stage"
set yrange [-0.3:stages]
set ytics 1
set grid x
set style fill solid 1.0 noborder
kind_color(k) = k == 0 ? 0x4c9be8 : k == 1 ? 0x1f4e9c : k == 2 ? 0xe8a33c : k == 3 ? 0x9a9a9a : k == 4 ? 0x2ca02c : 0xd62728
plot datafile using 1:2:3:(0.08):(kind_color($4)) with boxxyerror lc rgb variable notitle, \
     NaN with boxes lc rgb "#4c9be8" title "forward", NaN with boxes lc rgb "#1f4e9c" title "backward", \
     NaN with boxes lc rgb "#e8a33c" title "TP all-reduce", NaN with boxes lc rgb "#d62728" title "waiting (bubble, PP)", \
     NaN with boxes lc rgb "#2ca02c" title "DP all-reduce"
