# How one crossbar variant is Verilated and glued to the bridge: used by
# rtl/CMakeLists.txt for the prebuilt variants (XBAR_RTL_VARIANTS) and by
# rtl/variant/CMakeLists.txt for a variant built on first use at run time
# (rtl/xbar_rtl_build.c), so both are the same build. Needs find_package(verilator).
set(XBAR_RTL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(XBAR_RTL_SOURCES
  ${XBAR_RTL_DIR}/xbar_rr_arbiter.sv
  ${XBAR_RTL_DIR}/xbar_onehot_index.sv
  ${XBAR_RTL_DIR}/xbar_bit_transpose.sv
  ${XBAR_RTL_DIR}/xbar_islip_alloc.sv
  ${XBAR_RTL_DIR}/xbar_input_buf.sv
  ${XBAR_RTL_DIR}/xbar_fanout_join.sv
  ${XBAR_RTL_DIR}/xbar_datapath.sv
  ${XBAR_RTL_DIR}/xbar_top.sv)
# DEPTH (physical flits per VOQ; the upstream may use fewer credits) and
# FLIT_W are common to all variants.
set(XBAR_RTL_DEPTH 64)
set(XBAR_RTL_FLIT_W 64)
# Everything a variant's build reads besides the compiler and Verilator:
# the run-time cache key hashes these (with the Verilator version and flags).
set(XBAR_RTL_BUILD_INPUTS ${XBAR_RTL_SOURCES}
  ${XBAR_RTL_DIR}/xbar_rtl_variant.cmake
  ${XBAR_RTL_DIR}/xbar_rtl_variant.cpp.in
  ${XBAR_RTL_DIR}/xbar_rtl_variant.h
  ${XBAR_RTL_DIR}/xbar_rtl_model.hpp
  ${XBAR_RTL_DIR}/xbar_rtl.h
  ${XBAR_RTL_DIR}/variant/CMakeLists.txt
  ${XBAR_RTL_DIR}/../models/nvswitch/xbar_io.h)

# Verilate "ports:latency:iters:fanout_read" into TARGET with its glue; the
# Verilated class name (the variant's prefix) is returned in PREFIX_VAR.
function(xbar_rtl_add_variant target spec prefix_var)
  string(REPLACE ":" ";" pl ${spec})
  list(LENGTH pl npl)
  if(NOT npl EQUAL 4)
    message(FATAL_ERROR "RTL variant '${spec}': expected ports:latency:iters:fanout_read")
  endif()
  list(GET pl 0 PORTS)
  list(GET pl 1 LAT)
  list(GET pl 2 ITERS)
  list(GET pl 3 FAN)
  set(DEPTH ${XBAR_RTL_DEPTH})
  set(FLIT_W ${XBAR_RTL_FLIT_W})
  set(PREFIX Vxbar_p${PORTS}_l${LAT}_i${ITERS}_f${FAN})
  verilate(${target} PREFIX ${PREFIX} TOP_MODULE xbar_top
    SOURCES ${XBAR_RTL_SOURCES}
    OPT_SLOW -O0 OPT_FAST -O2   # the once-run init code is large: do not spend build time on it
    VERILATOR_ARGS -Wall -O3 --x-assign fast --x-initial unique
      -GNPORTS=${PORTS} -GLATENCY=${LAT} -GDEPTH=${DEPTH} -GITERS=${ITERS} -GFLIT_W=${FLIT_W} -GFANOUT_READ=${FAN})
  set(glue ${CMAKE_CURRENT_BINARY_DIR}/${PREFIX}_glue.cpp)
  configure_file(${XBAR_RTL_DIR}/xbar_rtl_variant.cpp.in ${glue} @ONLY)
  target_sources(${target} PRIVATE ${glue})
  set(${prefix_var} ${PREFIX} PARENT_SCOPE)
endfunction()
