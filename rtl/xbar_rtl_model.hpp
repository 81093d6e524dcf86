// The per-cycle adapter between the C bridge (xbar_rtl.cpp) and one
// Verilated xbar_top: a template over the Verilated class, so every port
// field offset is a constant. Instantiated once per variant by the glue
// template (xbar_rtl_variant.cpp.in), for the prebuilt and the runtime-built
// variants alike. The host sees only model_base; a runtime-built variant
// brings its own copy of the Verilator runtime (hidden symbols, see
// rtl/variant/CMakeLists.txt), so only this interface crosses the boundary.
#ifndef XBAR_RTL_MODEL_HPP
#define XBAR_RTL_MODEL_HPP

#include <cstdint>
#include <cstring>
#include <memory>

#include "verilated.h"
#include "models/nvswitch/xbar_io.h"

namespace xbar_rtl_glue {


// ---- bit fields of Verilated ports: scalars (CData..QData) or VlWide<W> ----
template <typename T> struct port_bits {
    static uint64_t get(const T &v, unsigned lsb, unsigned w)
    {
        uint64_t x = static_cast<uint64_t>(v) >> lsb;
        return w >= 64 ? x : (x & ((uint64_t{1} << w) - 1));
    }
    static void set(T &v, unsigned lsb, unsigned w, uint64_t x)
    {
        uint64_t m = (w >= 64 ? ~uint64_t{0} : ((uint64_t{1} << w) - 1)) << lsb;
        v = static_cast<T>((static_cast<uint64_t>(v) & ~m) | ((x << lsb) & m));
    }
    static void clear(T &v) { v = 0; }
};
// Wide ports: a field of at most 64 bits spans at most three 32-bit words.
template <std::size_t W> struct port_bits<VlWide<W>> {
    static uint64_t get(const VlWide<W> &v, unsigned lsb, unsigned w)
    {
        const unsigned word = lsb / 32, off = lsb % 32;
        uint64_t x = v[word] >> off;
        if (w > 32 - off && word + 1 < W) x |= static_cast<uint64_t>(v[word + 1]) << (32 - off);
        if (w > 64 - off && word + 2 < W) x |= static_cast<uint64_t>(v[word + 2]) << (64 - off);
        return w >= 64 ? x : (x & ((uint64_t{1} << w) - 1));
    }
    static void set(VlWide<W> &v, unsigned lsb, unsigned w, uint64_t x)
    {
        const unsigned word = lsb / 32, off = lsb % 32;
        const uint64_t m = w >= 64 ? ~uint64_t{0} : ((uint64_t{1} << w) - 1);
        x &= m;
        v[word] = (v[word] & ~static_cast<uint32_t>(m << off)) | static_cast<uint32_t>(x << off);
        if (w > 32 - off && word + 1 < W)
            v[word + 1] = (v[word + 1] & ~static_cast<uint32_t>(m >> (32 - off))) | static_cast<uint32_t>(x >> (32 - off));
        if (w > 64 - off && word + 2 < W)
            v[word + 2] = (v[word + 2] & ~static_cast<uint32_t>(m >> (64 - off))) | static_cast<uint32_t>(x >> (64 - off));
    }
    static void clear(VlWide<W> &v) { std::memset(v.data(), 0, sizeof(EData) * W); }
};
template <typename T> uint64_t get_bits(const T &v, unsigned lsb, unsigned w) { return port_bits<T>::get(v, lsb, w); }
template <typename T> void set_bits(T &v, unsigned lsb, unsigned w, uint64_t x) { port_bits<T>::set(v, lsb, w, x); }
template <typename T> void clear_bits(T &v) { port_bits<T>::clear(v); }

// Pointers are one-hot in the RTL; the index of a one-hot (0 for 0).
inline unsigned onehot_index(uint64_t x) { return x ? static_cast<unsigned>(__builtin_ctzll(x)) : 0; }

constexpr unsigned clog2(unsigned n)
{
    unsigned b = 0;
    while ((1u << b) < n) b++;
    return b;
}

// Everything the harness may trace, decoded per cycle (only when tracing).
struct snapshot {
    uint64_t in_valid, in_data[XBAR_MAX_PORTS], in_dest[XBAR_MAX_PORTS];
    uint64_t out_valid, out_data[XBAR_MAX_PORTS], out_src[XBAR_MAX_PORTS];
    uint64_t credit, credit_queue[XBAR_MAX_PORTS];
    uint64_t match, match_out[XBAR_MAX_PORTS];
    uint64_t gptr[XBAR_MAX_PORTS], aptr[XBAR_MAX_PORTS], req[XBAR_MAX_PORTS], occ[XBAR_MAX_PORTS];
    uint64_t rst_n, overflow, cycle;
};

class model_base {
public:
    virtual ~model_base() = default;
    virtual void set_iters(unsigned iters) = 0;
    virtual void reset(unsigned cycles) = 0;
    virtual void step(const xbar_in *in, xbar_out *out) = 0;
    virtual void snap(snapshot *s) const = 0;   // the values of the cycle just stepped (pre-edge)
    virtual bool overflow() const = 0;
    virtual unsigned gptr(unsigned j) const = 0;
    virtual unsigned aptr(unsigned i) const = 0;
    virtual unsigned occ(unsigned i) const = 0;
    virtual void finish_cycle() = 0;
    bool tracing = false;   // keep a copy of the inputs for snap()
};

// NPORTS and DEPTH are template arguments, so every port field offset is a
// constant and the per-cycle copies compile to a few word moves.
template <class V, unsigned NPORTS, unsigned DEPTH, bool FANOUT> class model final : public model_base {
public:
    model()
    {
        ctx_.reset(new VerilatedContext);
        ctx_->randReset(2);     // random initial state: the reset must cover everything
        ctx_->randSeed(1);      // ... reproducibly
        top_.reset(new V{ctx_.get(), "xbar_top"});
        top_->clk_i = 0;
        top_->rst_ni = 0;
        top_->eval();
    }
    ~model() override { top_->final(); }

    void set_iters(unsigned iters) override { top_->cfg_iters_i = static_cast<CData>(iters); }

    void reset(unsigned cycles) override
    {
        clear_bits(top_->in_valid_i);
        clear_bits(top_->in_data_i);
        clear_bits(top_->in_dest_i);
        driven_ = 0;
        top_->rst_ni = 0;
        for (unsigned c = 0; c < cycles; c++) edge();
        top_->rst_ni = 1;
        top_->clk_i = 0;
        top_->eval();
    }

    void step(const xbar_in *in, xbar_out *out) override
    {
        drive_inputs(in);
        top_->clk_i = 0;
        top_->eval();
        read_outputs(out);
        edge_high_ = true;
    }

    // The rising edge that ends the cycle. Split from step() so the trace can
    // sample the pre-edge values first.
    void finish_cycle() override
    {
        if (!edge_high_) return;
        top_->clk_i = 1;
        top_->eval();
        edge_high_ = false;
    }

    void snap(snapshot *s) const override
    {
        std::memcpy(s->in_data, in_data_, sizeof in_data_);
        std::memcpy(s->in_dest, in_dest_, sizeof in_dest_);
        s->in_valid = in_valid_;
        s->out_valid = get_bits(top_->out_valid_o, 0, n_);
        s->credit = get_bits(top_->credit_o, 0, n_);
        s->match = 0;
        for (unsigned p = 0; p < n_; p++) {
            s->out_data[p] = get_bits(top_->out_data_o, p * 64, 64);
            s->out_src[p] = get_bits(top_->out_src_o, p * iw_, iw_);
            s->credit_queue[p] = get_bits(top_->credit_queue_o, p * iw_, iw_);
            uint64_t row = get_bits(top_->dbg_match_o, p * n_, n_);
            s->match_out[p] = row ? static_cast<uint64_t>(__builtin_ctzll(row)) : 0;
            if (row) s->match |= uint64_t{1} << p;
            s->gptr[p] = gptr(p);
            s->aptr[p] = onehot_index(get_bits(top_->dbg_accept_ptr_o, p * n_, n_));
            s->req[p] = get_bits(top_->dbg_req_o, p * n_, n_);
            s->occ[p] = get_bits(top_->dbg_occupancy_o, p * ow_, ow_);
        }
        s->rst_n = top_->rst_ni;
        s->overflow = top_->err_overflow_o;
    }

    bool overflow() const override { return top_->err_overflow_o != 0; }
    // dbg_grant_ptr_o holds the grant pointers as the allocator keeps them: row i, bit j set when g[j] == i.
    unsigned gptr(unsigned j) const override
    {
        for (unsigned i = 0; i < n_; i++)
            if ((get_bits(top_->dbg_grant_ptr_o, i * n_, n_) >> j) & 1) return i;
        return 0;
    }
    unsigned aptr(unsigned i) const override { return onehot_index(get_bits(top_->dbg_accept_ptr_o, i * n_, n_)); }
    unsigned occ(unsigned i) const override { return static_cast<unsigned>(get_bits(top_->dbg_occupancy_o, i * ow_, ow_)); }

private:
    // Drive this cycle's inputs. Only ports that present a flit, or did in
    // the last cycle (their data and mask go back to zero, for clean waves),
    // are written: O(active ports).
    void drive_inputs(const xbar_in *in)
    {
        const uint64_t valid = in->valid & all_;
        set_bits(top_->in_valid_i, 0, n_, valid);
        for (uint64_t r = valid; r; r &= r - 1) {
            const unsigned i = static_cast<unsigned>(__builtin_ctzll(r));
            set_bits(top_->in_data_i, i * 64, 64, in->in[i].data);
            set_bits(top_->in_dest_i, i * n_, n_, in->in[i].dest_mask & all_);
        }
        for (uint64_t r = driven_ & ~valid; r; r &= r - 1) {
            const unsigned i = static_cast<unsigned>(__builtin_ctzll(r));
            set_bits(top_->in_data_i, i * 64, 64, 0);
            set_bits(top_->in_dest_i, i * n_, n_, 0);
        }
        driven_ = valid;
        if (tracing) save_inputs(valid, in);
    }

    // What the switch drives in this cycle (every field of out is written).
    void read_outputs(xbar_out *out) const
    {
        out->valid = get_bits(top_->out_valid_o, 0, n_);
        out->credit = get_bits(top_->credit_o, 0, n_);
        std::memset(out->out_data, 0, n_ * sizeof out->out_data[0]);
        std::memset(out->out_src, 0, n_ * sizeof out->out_src[0]);
        for (uint64_t r = out->valid; r; r &= r - 1) {
            const unsigned p = static_cast<unsigned>(__builtin_ctzll(r));
            out->out_data[p] = get_bits(top_->out_data_o, p * 64, 64);
            out->out_src[p] = static_cast<uint8_t>(get_bits(top_->out_src_o, p * iw_, iw_));
        }
        out->match_in = 0;
        for (unsigned p = 0; p < n_; p++) {
            out->credit_queue[p] = static_cast<uint8_t>(get_bits(top_->credit_queue_o, p * iw_, iw_));
            // dbg_match_o row p: one-hot output matched to input p
            const uint64_t row = get_bits(top_->dbg_match_o, p * n_, n_);
            out->match_out[p] = static_cast<uint8_t>(onehot_index(row));
            out->match_in |= uint64_t{row != 0} << p;
        }
        if constexpr (fanout_)
            for (unsigned p = 0; p < n_; p++) out->credit_extra[p] = get_bits(top_->credit_extra_o, p * n_, n_);
        else
            std::memset(out->credit_extra, 0, n_ * sizeof out->credit_extra[0]);
    }

    void edge()
    {
        top_->clk_i = 0;
        top_->eval();
        top_->clk_i = 1;
        top_->eval();
    }
    void save_inputs(uint64_t valid, const xbar_in *in)
    {
        in_valid_ = valid;
        for (unsigned i = 0; i < n_; i++) {
            bool v = (valid >> i) & 1;
            in_data_[i] = v ? in->in[i].data : 0;
            in_dest_[i] = v ? (in->in[i].dest_mask & all_) : 0;
        }
    }

    static constexpr unsigned n_ = NPORTS, iw_ = clog2(NPORTS), ow_ = clog2(NPORTS * DEPTH + 1);
    static constexpr uint64_t all_ = NPORTS >= 64 ? ~uint64_t{0} : ((uint64_t{1} << NPORTS) - 1);
    static constexpr bool fanout_ = FANOUT;   // FANOUT_READ=1: credit_extra_o can be non-zero
    uint64_t driven_ = 0;    // inputs whose data/mask ports hold a flit
    bool edge_high_ = false;
    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<V> top_;
    uint64_t in_valid_ = 0, in_data_[XBAR_MAX_PORTS] = {}, in_dest_[XBAR_MAX_PORTS] = {};
};

}  // namespace xbar_rtl_glue

#endif
