// The block tables of a Batch's sequences: prefix sharing, the blocks a step writes into
// (copy on write of shared ones), and with a key window the ring a table becomes, whose
// blocks go back to the pool once no query of the sequence can see them.

#include "host/model/batch.hpp"

#include "runtime/error.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace vkf {

namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
    return (a + b - 1) / b;
}

}  // namespace

std::uint32_t& Batch::table_entry(Sequence& seq, std::uint32_t b) const {
    if (options_.window == 0) {
        return seq.blocks[b];
    }
    if (seq.blocks.empty()) {
        // The ring's unused slots hold block 0: never read (outside every window), but valid.
        seq.blocks.assign(settings_.blocks_per_seq, 0);
    }
    return seq.blocks[b % settings_.blocks_per_seq];
}

std::uint64_t Batch::sequence_limit() const {
    if (options_.window != 0 && !model_.config().learned_pos_emb) {
        // Positions count on; the kernels and the slot words hold them in 32 bits.
        return std::numeric_limits<std::int32_t>::max();
    }
    return options_.max_sequence_tokens;
}

std::uint32_t Batch::blocks_held(SequenceId id) const {
    const Sequence& seq = get(id);
    return seq.end_block - seq.first_block;
}

void Batch::release_unseen(Sequence& seq, std::uint32_t position) {
    if (options_.window == 0 || position <= options_.window) {
        return;
    }
    // A query at `position` sees keys position - W onwards; the blocks wholly before that are
    // read by no later step of this sequence. A block another sequence holds too (a shared
    // prefix) stays in the pool for it: release() only drops this sequence's reference.
    const std::uint32_t first_seen = (position - options_.window) / options_.block_size;
    while (seq.first_block < std::min(first_seen, seq.end_block)) {
        cache_.blocks().release(table_entry(seq, seq.first_block));
        ++seq.first_block;
    }
}

void Batch::share_prefix(Sequence& seq) {
    // The longest run of leading tokens another sequence has computed; the last fed token is
    // always run (its logits are wanted).
    Sequence* donor = nullptr;
    std::uint32_t best = 0;
    for (auto& [other_id, other] : sequences_) {
        if (&other == &seq) {
            continue;
        }
        const std::uint32_t limit =
            std::min<std::uint32_t>(other.computed, static_cast<std::uint32_t>(seq.tokens.size()) - 1);
        std::uint32_t n = 0;
        while (n < limit && other.tokens[n] == seq.tokens[n]) {
            ++n;
        }
        if (n > best) {
            best = n;
            donor = &other;
        }
    }
    if (donor == nullptr) {
        return;
    }
    // With a window the donor may have freed its oldest blocks; the new sequence's next query
    // (position `best`) needs the blocks from best - W on, and takes only those (it would
    // free the older ones before its first step anyway). A donor that no longer holds them
    // all shares nothing.
    const std::uint32_t bs = options_.block_size;
    const std::uint32_t first = options_.window != 0 && best > options_.window ? (best - options_.window) / bs : 0;
    if (first < donor->first_block) {
        return;
    }
    const std::uint32_t blocks = ceil_div(best, bs);
    Sequence& from = *donor;
    for (std::uint32_t b = first; b < blocks; ++b) {
        const std::uint32_t block = table_entry(from, b);
        cache_.blocks().retain(block);
        if (options_.window == 0) {
            seq.blocks.push_back(block);
        } else {
            table_entry(seq, b) = block;
        }
    }
    seq.first_block = first;
    seq.end_block = blocks;
    seq.computed = best;
    seq.shared = best;
    for (std::uint32_t end : donor->chunk_ends) {
        if (end <= best) {
            seq.chunk_ends.push_back(end);
        }
    }
    if (seq.chunk_ends.empty() || seq.chunk_ends.back() != best) {
        seq.chunk_ends.push_back(best);
    }
}

void Batch::remove(SequenceId id) {
    Sequence& seq = get(id);
    for (std::uint32_t b = seq.first_block; b < seq.end_block; ++b) {
        cache_.blocks().release(table_entry(seq, b));
    }
    sequences_.erase(id);
}

std::uint32_t Batch::reserve(Sequence& seq, std::uint32_t rows,
                             std::vector<std::pair<std::uint32_t, std::uint32_t>>& copies) {
    KvBlocks& pool = cache_.blocks();
    const std::uint32_t bs = options_.block_size;
    release_unseen(seq, seq.computed);
    if (seq.computed % bs != 0) {
        // The block the next row goes into is partly filled; when another sequence holds it
        // too, this one writes into a copy.
        std::uint32_t& block = table_entry(seq, seq.computed / bs);
        if (pool.references(block) > 1) {
            const std::optional<std::uint32_t> fresh = pool.allocate();
            if (!fresh) {
                return 0;
            }
            copies.emplace_back(block, *fresh);
            pool.release(block);
            block = *fresh;
        }
    }
    // With a window, rows <= chunk keep the ring's span within blocks_per_seq (window_ring_blocks).
    while (std::uint64_t{seq.end_block} * bs < std::uint64_t{seq.computed} + rows) {
        const std::optional<std::uint32_t> fresh = pool.allocate();
        if (!fresh) {
            return static_cast<std::uint32_t>(std::uint64_t{seq.end_block} * bs - seq.computed);
        }
        if (options_.window == 0) {
            seq.blocks.push_back(*fresh);
        } else {
            table_entry(seq, seq.end_block) = *fresh;
        }
        ++seq.end_block;
    }
    return rows;
}

}  // namespace vkf
