#!/bin/sh
# Every test `simrun list` knows must be in the regression (and the other way round):
# a test registered in a way the CMake scan does not see would silently never run.
simrun=$1
expected=$(printf '%s\n' $2 | sort)
actual=$("$simrun" list | awk '{print $1}' | sort)
if [ "$expected" != "$actual" ]; then
  echo "regression list and 'simrun list' differ:"
  echo "  regression: $(echo $expected)"
  echo "  simrun:     $(echo $actual)"
  echo "Register tests as 'SIM_TEST(name, ...)' or 'SIM_TEST_RANKED(name, ...)' at the start of a line in tb/*.c."
  exit 1
fi
echo "regression covers all $(echo "$actual" | wc -l) tests"
