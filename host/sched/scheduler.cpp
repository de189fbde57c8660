// The Scheduler's sequences: adding, feeding (and the prefix a new prompt takes from another
// sequence), removing, and what a step that ran them changes. The steps' policy is in
// scheduler_step.cpp.

#include "host/sched/scheduler.hpp"

#include "base/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vkf {

namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint32_t b) {
    return static_cast<std::uint32_t>((a + b - 1) / b);
}

SchedulerOptions checked(const SchedulerOptions& o) {
    if (o.blocks == 0 || o.block_size == 0) {
        throw Error(fmt::format("scheduler: a pool of {} blocks of {} tokens; it needs at least one of one", o.blocks,
                                o.block_size));
    }
    if (o.chunk == 0 || o.max_sequences == 0) {
        throw Error(
            fmt::format("scheduler: steps of {} rows of {} sequences; at least one of one", o.chunk, o.max_sequences));
    }
    // A table too short would have reserve() write past it: a windowed one must hold the keys
    // of a step and the window before it, an unwindowed one a whole sequence.
    const std::uint32_t need =
        o.window != 0 ? window_ring_blocks(o.window, o.chunk, o.block_size) : ceil_div(o.sequence_limit, o.block_size);
    if (o.table_blocks < need) {
        throw Error(fmt::format("scheduler: block tables of {} blocks, but {} are needed", o.table_blocks, need));
    }
    if (o.cache_prefixes && o.window != 0) {
        throw Error(fmt::format(
            "scheduler: prefix caching with a key window of {} tokens: a windowed sequence gives its first blocks "
            "back as it goes, so there is no whole prefix to keep",
            o.window));
    }
    return o;
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options)
    : options_(checked(options)),
      pool_(options_.blocks),
      chunk_limit_(options_.submission_target_ms > 0 ? std::min<std::uint32_t>(options_.chunk, 16) : options_.chunk) {
    if (options_.cache_prefixes) {
        cache_.emplace(pool_);
        pool_.set_reclaimer([this] { return cache_->evict_one(); });
    }
}

Scheduler::Sequence& Scheduler::get(SequenceId id) {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) {
        throw Error(fmt::format("batch: no sequence {}", id));
    }
    return it->second;
}

const Scheduler::Sequence& Scheduler::get(SequenceId id) const {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) {
        throw Error(fmt::format("batch: no sequence {}", id));
    }
    return it->second;
}

SequenceId Scheduler::add(std::uint64_t cache_salt) {
    const SequenceId id = next_id_++;
    const BlockTableShape shape{.block_size = options_.block_size,
                                .ring = options_.window != 0 ? options_.table_blocks : 0,
                                .window = options_.window};
    sequences_.try_emplace(id, BlockTable(pool_, shape), next_order_++).first->second.salt = cache_salt;
    return id;
}

void Scheduler::feed(SequenceId id, std::span<const std::uint32_t> ids, Logits logits) {
    Sequence& seq = get(id);
    if (ids.empty()) {
        throw Error(fmt::format("batch: sequence {} fed no token ids", id));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= options_.vocab_size) {
            throw Error(fmt::format("batch: token id {} at input position {} is not below the vocabulary size {}",
                                    ids[i], i, options_.vocab_size));
        }
    }
    if (ids.size() > options_.sequence_limit - seq.tokens.size()) {
        throw Error(fmt::format("batch: {} more tokens after {} exceed a sequence's {} tokens", ids.size(),
                                seq.tokens.size(), options_.sequence_limit));
    }
    const bool fresh = seq.tokens.empty();
    seq.tokens.insert(seq.tokens.end(), ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const bool last = i + 1 == ids.size();
        seq.want.push_back(logits == Logits::All || logits == Logits::Every || (logits == Logits::Last && last) ? 1
                                                                                                                : 0);
    }
    // Logits::Every: every row runs, so nothing is shared.
    if (fresh && logits != Logits::Every && (options_.share_prefixes || options_.cache_prefixes)) {
        share_prefix(seq);
    }
}

void Scheduler::share_prefix(Sequence& seq) {
    // The longest run of leading tokens another sequence has computed; the last fed token is
    // always run (its logits are wanted).
    const Sequence* donor = nullptr;
    std::uint32_t best = 0;
    for (const auto& [other_id, other] : sequences_) {
        if (&other == &seq || other.salt != seq.salt || !options_.share_prefixes) {
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
    if (cache_ && take_cached_prefix(seq, best) > 0) {
        return;
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
    if (!seq.table.share(donor->table, first, ceil_div(best, bs))) {
        return;
    }
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

std::uint32_t Scheduler::take_cached_prefix(Sequence& seq, std::uint32_t live) {
    // Whole blocks only, and never the last fed token (its logits are wanted).
    const std::uint32_t bs = options_.block_size;
    const auto full = static_cast<std::uint32_t>((seq.tokens.size() - 1) / bs);
    std::vector<std::uint32_t> blocks;
    std::vector<std::uint32_t> chunk_ends;
    std::uint64_t parent = seq.salt;
    for (std::uint32_t b = 0; b < full; ++b) {
        const auto tokens = std::span(seq.tokens).subspan(std::size_t{b} * bs, bs);
        const std::uint64_t hash = PrefixCache::chain(parent, tokens);
        const PrefixCache::Entry* entry = cache_->find(hash, parent, tokens);
        if (entry == nullptr) {
            break;
        }
        blocks.push_back(entry->block);
        chunk_ends.insert(chunk_ends.end(), entry->chunk_ends.begin(), entry->chunk_ends.end());
        parent = hash;
    }
    const auto cached = static_cast<std::uint32_t>(blocks.size()) * bs;
    cache_->count_lookup(cached > live ? cached : 0);
    if (cached <= live) {
        return 0;
    }
    seq.table.adopt(blocks);
    seq.computed = cached;
    seq.shared = cached;
    seq.chunk_ends = std::move(chunk_ends);
    if (seq.chunk_ends.empty() || seq.chunk_ends.back() != cached) {
        seq.chunk_ends.push_back(cached);
    }
    return cached;
}

void Scheduler::cache_blocks(const Sequence& seq) {
    // Last block first: a chain's later blocks are evicted before its earlier ones.
    const std::uint32_t bs = options_.block_size;
    const std::uint32_t full = std::min(seq.computed / bs, seq.table.end());
    std::vector<std::uint64_t> hashes(full + 1, seq.salt);
    for (std::uint32_t b = 0; b < full; ++b) {
        hashes[b + 1] = PrefixCache::chain(hashes[b], std::span(seq.tokens).subspan(std::size_t{b} * bs, bs));
    }
    for (std::uint32_t b = full; b-- > 0;) {
        std::vector<std::uint32_t> ends;
        for (std::uint32_t end : seq.chunk_ends) {
            if (end > b * bs && end <= (b + 1) * bs) {
                ends.push_back(end);
            }
        }
        cache_->keep(hashes[b + 1], hashes[b], std::span(seq.tokens).subspan(std::size_t{b} * bs, bs), ends,
                     seq.table.block(b), b);
    }
}

void Scheduler::remove(SequenceId id) {
    Sequence& seq = get(id);
    if (cache_) {
        cache_blocks(seq);
    }
    seq.table.release();  // here, not in the destructor, so that broken counts throw
    sequences_.erase(id);
}

std::vector<std::uint32_t> Scheduler::restore(SequenceId id, std::span<const std::uint32_t> tokens,
                                              std::span<const std::uint32_t> chunk_ends) {
    Sequence& seq = get(id);
    if (!seq.tokens.empty() || seq.table.end() != 0) {
        throw Error(fmt::format("batch: sequence {} has tokens already; a state is restored into a new one", id));
    }
    if (options_.window != 0) {
        throw Error(
            fmt::format("batch: a saved state cannot be restored under a key window ({} tokens)", options_.window));
    }
    if (tokens.empty() || tokens.size() > options_.sequence_limit) {
        throw Error(fmt::format("batch: a saved state of {} tokens; a sequence holds 1 to {}", tokens.size(),
                                options_.sequence_limit));
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] >= options_.vocab_size) {
            throw Error(fmt::format("batch: token id {} at position {} is not below the vocabulary size {}", tokens[i],
                                    i, options_.vocab_size));
        }
    }
    const auto n = static_cast<std::uint32_t>(tokens.size());
    std::vector<BlockCopy> copies;  // none: a fresh table shares nothing
    if (seq.table.reserve(0, n, copies) < n) {
        seq.table.release();
        throw Error(
            fmt::format("batch: no room for a saved state of {} tokens: it needs {} KV blocks of {} tokens, {} "
                        "are free",
                        n, ceil_div(n, options_.block_size), options_.block_size, pool_.free()));
    }
    seq.tokens.assign(tokens.begin(), tokens.end());
    seq.want.assign(tokens.size(), 0);
    seq.computed = n;
    seq.chunk_ends.assign(chunk_ends.begin(), chunk_ends.end());
    std::vector<std::uint32_t> blocks;
    for (std::uint32_t b = 0; b < seq.table.end(); ++b) {
        blocks.push_back(seq.table.block(b));
    }
    return blocks;
}

std::vector<StepProgress> Scheduler::complete(const StepSchedule& step, const StepOutcome& outcome) {
    // Checked whole first: a step completed twice changes nothing.
    for (const ScheduledSequence& s : step.sequences) {
        auto it = sequences_.find(s.id);
        if (it != sequences_.end() && it->second.computed != s.position) {
            throw Error(fmt::format("scheduler: sequence {} ran from position {}, but has {} tokens computed", s.id,
                                    s.position, it->second.computed));
        }
    }
    std::vector<StepProgress> progress;
    for (const ScheduledSequence& s : step.sequences) {
        auto it = sequences_.find(s.id);
        if (it == sequences_.end()) {
            continue;
        }
        Sequence& seq = it->second;
        seq.computed += s.rows;
        seq.chunk_ends.push_back(seq.computed);
        progress.push_back(StepProgress{
            .id = s.id, .rows = s.rows, .position = seq.computed, .done = seq.computed == seq.tokens.size()});
    }
    // Only prompt chunks resize the next one: a step of decode tokens alone says little.
    if (options_.submission_target_ms > 0 && outcome.gpu_ms && step.rows() > step.sequences.size()) {
        chunk_limit_ = prompt_chunk_after(*outcome.gpu_ms, step.rows(), options_.submission_target_ms, options_.chunk);
    }
    return progress;
}

bool Scheduler::has_pending() const {
    return std::any_of(sequences_.begin(), sequences_.end(),
                       [](const auto& entry) { return entry.second.computed < entry.second.tokens.size(); });
}

std::uint32_t Scheduler::position(SequenceId id) const {
    return get(id).computed;
}

std::uint32_t Scheduler::pending(SequenceId id) const {
    const Sequence& seq = get(id);
    return static_cast<std::uint32_t>(seq.tokens.size()) - seq.computed;
}

std::uint32_t Scheduler::shared_prefix(SequenceId id) const {
    return get(id).shared;
}

const std::vector<std::uint32_t>& Scheduler::chunk_ends(SequenceId id) const {
    return get(id).chunk_ends;
}

const std::vector<std::uint32_t>& Scheduler::tokens(SequenceId id) const {
    return get(id).tokens;
}

std::vector<SequenceId> Scheduler::sequences() const {
    std::vector<SequenceId> ids;
    for (const auto& [id, seq] : sequences_) {
        ids.push_back(id);
    }
    return ids;
}

std::uint32_t Scheduler::blocks_held(SequenceId id) const {
    return get(id).table.held();
}

const BlockTable& Scheduler::table(SequenceId id) const {
    return get(id).table;
}

}  // namespace vkf
