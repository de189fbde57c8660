// The Scheduler under thousands of random add, feed, step and remove calls with small pools
// (part of test_scheduler): after every call its block tables and the pool must agree, and a
// model of the KV cache (what each slot holds, written by the steps' rows and block copies)
// must hold every computed token's key where the sequence's table says. With a few token
// values, prompts share prefixes often; with pools of a few blocks, sequences block often.

#include "base/error.hpp"
#include "host/sched/scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace vkf::test {
namespace {

constexpr std::uint32_t kVocab = 3;
constexpr std::uint32_t kUnwritten = ~0u;

struct Mirror {
    std::vector<std::uint32_t> tokens;
    std::vector<bool> want;
    std::vector<std::uint32_t> runs;  // per position: the steps that ran it
    std::uint32_t shared = 0;
};

// Written by a step's row: the token and position whose key the slot holds.
struct Key {
    std::uint32_t token = kUnwritten;
    std::uint32_t position = kUnwritten;
    bool operator==(const Key&) const = default;
};

SchedulerOptions random_options(std::mt19937_64& rng) {
    const auto pick = [&](std::uint32_t lo, std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng);
    };
    SchedulerOptions o{.block_size = std::array{1u, 2u, 4u}[pick(0, 2)],
                       .max_sequences = pick(1, 4),
                       .chunk = pick(1, 8),
                       .vocab_size = kVocab,
                       .share_prefixes = pick(0, 3) != 0,
                       .submission_target_ms = pick(0, 1) * 500};
    if (pick(0, 2) == 0) {
        o.window = pick(1, 10);
        o.table_blocks = window_ring_blocks(o.window, o.chunk, o.block_size);
        o.blocks = o.table_blocks + pick(0, 6);
        o.sequence_limit = 1u << 20;
    } else {
        o.blocks = (pick(6, 48) + o.block_size - 1) / o.block_size;
        o.sequence_limit = pick(4, 40);
        o.table_blocks = static_cast<std::uint32_t>((o.sequence_limit + o.block_size - 1) / o.block_size);
        o.cache_prefixes = pick(0, 1) != 0;
    }
    return o;
}

// What the random calls exercised, over all runs: a property test whose pools never ran out
// or whose prompts never shared tests little.
struct Coverage {
    std::uint64_t steps = 0, ran = 0, rows = 0, blocked = 0, deferred = 0, copies = 0, shared = 0, ring_releases = 0;
    std::uint64_t cache_hit_tokens = 0, evictions = 0;
};

class Checker {
public:
    Checker(const SchedulerOptions& o, std::uint64_t seed, Coverage& coverage)
        : o_(o), s_(o), rng_(seed), cache_(std::size_t{o.blocks} * o.block_size), coverage_(coverage) {}

    void run(std::uint32_t calls) {
        for (std::uint32_t i = 0; i < calls && !::testing::Test::HasFatalFailure(); ++i) {
            const std::uint32_t what = pick(0, 9);
            if (what < 2) {
                add();
            } else if (what < 4) {
                feed_some();
            } else if (what < 6) {
                remove(random_sequence());
            } else {
                step();
            }
        }
        if (::testing::Test::HasFatalFailure()) {
            return;
        }
        // Drain: no more tokens; what waits for blocks runs once the youngest blocked leave.
        for (std::uint32_t i = 0; i < 10000 && s_.has_pending() && !::testing::Test::HasFatalFailure(); ++i) {
            const StepSchedule schedule = step();
            if (schedule.empty()) {
                ASSERT_FALSE(schedule.blocked.empty()) << "pending sequences neither ran nor blocked";
                remove(*std::max_element(schedule.blocked.begin(), schedule.blocked.end()));
            }
        }
        ASSERT_FALSE(s_.has_pending()) << "the drain did not end";
        for (const auto& [id, m] : seqs_) {
            for (std::size_t p = 0; p < m.tokens.size(); ++p) {
                ASSERT_EQ(m.runs[p], p < m.shared ? 0u : 1u) << "sequence " << id << ", position " << p;
            }
        }
        while (!seqs_.empty()) {
            remove(seqs_.begin()->first);
        }
        const PrefixCache* cache = s_.prefix_cache();
        ASSERT_EQ(s_.blocks().used(), cache != nullptr ? cache->size() : 0u) << "blocks leaked";
        if (cache != nullptr) {
            ASSERT_EQ(cache->reclaimable(), cache->size()) << "a cached block held after every sequence left";
            coverage_.cache_hit_tokens += cache->stats().hit_tokens;
            coverage_.evictions += cache->stats().evictions;
        }
    }

private:
    std::uint32_t pick(std::uint32_t lo, std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng_);
    }

    SequenceId random_sequence() {
        auto it = seqs_.begin();
        std::advance(it, pick(0, static_cast<std::uint32_t>(seqs_.size())));
        return it == seqs_.end() ? 0 : it->first;
    }

    void add() {
        // A third of the prompts start with a live sequence's first tokens (a prefix to share),
        // a third with a removed one's (a prefix the cache may hold).
        const std::uint32_t kind = pick(0, 2);
        const SequenceId like = kind == 0 ? random_sequence() : 0;
        const std::vector<std::uint32_t>* prefix = like != 0 ? &seqs_.at(like).tokens
                                                   : kind == 1 && !gone_.empty()
                                                       ? &gone_[pick(0, static_cast<std::uint32_t>(gone_.size()) - 1)]
                                                       : nullptr;
        const SequenceId id = s_.add();
        seqs_[id];
        if (prefix != nullptr && !prefix->empty()) {
            const std::vector<std::uint32_t> other = *prefix;
            const std::size_t n = std::min<std::size_t>(pick(1, 24), other.size());
            ASSERT_NO_THROW(s_.feed(id, std::span(other).first(n), Logits::Last));
            Mirror& m = seqs_.at(id);
            m.tokens.assign(other.begin(), other.begin() + static_cast<std::ptrdiff_t>(n));
            m.want.assign(n, false);
            m.want.back() = true;
            m.runs.assign(n, 0);
            if (m.tokens.size() < o_.sequence_limit && pick(0, 1) != 0) {
                feed(id, 1);  // a fresh token after the shared ones, fed later
            }
        } else {
            feed(id, pick(1, std::min<std::uint32_t>(24, static_cast<std::uint32_t>(o_.sequence_limit))));
        }
        seqs_[id].shared = s_.shared_prefix(id);
        coverage_.shared += seqs_[id].shared > 0 ? 1 : 0;
        for (std::uint32_t p = 0; p < seqs_[id].shared; ++p) {
            ASSERT_EQ(seqs_[id].tokens[p], s_.tokens(id)[p]);
        }
        check_state();
    }

    void feed_some() {
        const SequenceId id = random_sequence();
        if (id != 0) {
            feed(id, pick(1, 3));
            check_state();
        }
    }

    void feed(SequenceId id, std::uint32_t n) {
        Mirror& m = seqs_.at(id);
        std::vector<std::uint32_t> ids(n);
        for (std::uint32_t& t : ids) {
            t = pick(0, kVocab - 1);
        }
        const Logits which = std::array{Logits::Last, Logits::All, Logits::None}[pick(0, 2)];
        if (m.tokens.size() + n > o_.sequence_limit) {
            ASSERT_THROW(s_.feed(id, ids, which), Error);
            ASSERT_EQ(s_.tokens(id).size(), m.tokens.size()) << "a refused feed queued tokens";
            return;
        }
        s_.feed(id, ids, which);
        for (std::uint32_t i = 0; i < n; ++i) {
            m.tokens.push_back(ids[i]);
            m.want.push_back(which == Logits::All || (which == Logits::Last && i + 1 == n));
            m.runs.push_back(0);
        }
    }

    void remove(SequenceId id) {
        if (id != 0) {
            if (gone_.size() == 8) {
                gone_.erase(gone_.begin());
            }
            gone_.push_back(seqs_.at(id).tokens);
            s_.remove(id);
            seqs_.erase(id);
            check_state();
        }
    }

    StepSchedule step() {
        const std::uint32_t free_before = s_.blocks().free();
        const std::uint32_t limit = s_.chunk_limit();
        std::set<SequenceId> pending;
        for (const auto& [id, m] : seqs_) {
            if (s_.pending(id) > 0) {
                pending.insert(id);
            }
        }
        std::map<SequenceId, bool> decode;  // before the step: one token pending
        for (SequenceId id : pending) {
            decode[id] = s_.pending(id) == 1;
        }
        std::map<SequenceId, std::uint32_t> first_before;
        for (const auto& [id, m] : seqs_) {
            first_before[id] = s_.table(id).first();
        }
        const StepSchedule schedule = s_.schedule();
        check_schedule(schedule, pending, decode, free_before, limit);
        ++coverage_.steps;
        coverage_.ran += schedule.empty() ? 0 : 1;
        coverage_.rows += schedule.rows();
        coverage_.blocked += schedule.blocked.size();
        coverage_.deferred += schedule.deferred.size();
        coverage_.copies += schedule.copies.size();
        for (const auto& [id, first] : first_before) {
            coverage_.ring_releases += s_.table(id).first() - first;
        }
        // The executor's part: copies first, then the rows' keys.
        const std::uint32_t bs = o_.block_size;
        for (const BlockCopy& c : schedule.copies) {
            std::copy_n(cache_.begin() + std::size_t{c.from} * bs, bs, cache_.begin() + std::size_t{c.to} * bs);
        }
        for (std::uint32_t r = 0; r < schedule.rows(); ++r) {
            cache_[schedule.slots[r]] = Key{schedule.ids[r], schedule.positions[r]};
        }
        const std::optional<double> ms = pick(0, 1) ? std::optional<double>(pick(1, 2000)) : std::nullopt;
        const std::vector<StepProgress> progress = s_.complete(schedule, StepOutcome{.gpu_ms = ms});
        EXPECT_EQ(progress.size(), schedule.sequences.size());
        check_state();
        return schedule;
    }

    void check_schedule(const StepSchedule& step, const std::set<SequenceId>& pending,
                        const std::map<SequenceId, bool>& decode, std::uint32_t free_before, std::uint32_t limit) {
        const std::uint32_t bs = o_.block_size;
        std::multiset<SequenceId> listed(step.blocked.begin(), step.blocked.end());
        listed.insert(step.deferred.begin(), step.deferred.end());
        for (const ScheduledSequence& s : step.sequences) {
            listed.insert(s.id);
        }
        ASSERT_EQ(listed, std::multiset<SequenceId>(pending.begin(), pending.end()))
            << "every pending sequence is run, blocked or deferred, once";
        ASSERT_LE(step.rows(), limit);
        ASSERT_LE(step.sequences.size(), o_.max_sequences);
        if (!step.deferred.empty()) {
            ASSERT_TRUE(step.rows() == limit || step.sequences.size() == o_.max_sequences) << "deferred, room left";
        }
        if (o_.window == 0 && !step.blocked.empty()) {
            // Without a window nothing goes back to the pool during a schedule.
            ASSERT_EQ(s_.blocks().free(), 0u) << "blocked while a block was free";
            if (s_.prefix_cache() != nullptr) {
                ASSERT_EQ(s_.prefix_cache()->reclaimable(), 0u) << "blocked while a cached block was reclaimable";
            }
        }
        if (free_before > 0 && !pending.empty()) {
            ASSERT_FALSE(step.empty()) << "free blocks and pending tokens, but nothing ran";
        }
        std::uint32_t row = 0, logit = 0, longest = 0;
        std::pair<bool, SequenceId> last{false, 0};
        for (const ScheduledSequence& s : step.sequences) {
            // Decode tokens first, each group in the order added (ids count up).
            const std::pair<bool, SequenceId> key{!decode.at(s.id), s.id};
            ASSERT_TRUE(row == 0 || last < key) << "sequence " << s.id << " out of decode-first order";
            last = key;
            Mirror& m = seqs_.at(s.id);
            ASSERT_EQ(s.q_start, row);
            ASSERT_GT(s.rows, 0u);
            ASSERT_EQ(s.position, s_.position(s.id));
            ASSERT_EQ(s.blocks, s_.table(s.id).entries());
            longest = std::max(longest, s.rows);
            std::uint32_t wanted = 0;
            for (std::uint32_t i = 0; i < s.rows; ++i, ++row) {
                const std::uint32_t p = s.position + i;
                ASSERT_EQ(step.positions[row], p);
                ASSERT_EQ(step.ids[row], m.tokens.at(p));
                ASSERT_EQ(m.runs[p]++, 0u) << "position " << p << " of sequence " << s.id << " ran twice";
                const std::uint32_t block = s_.table(s.id).block(p / bs);
                ASSERT_EQ(step.slots[row], block * bs + p % bs);
                ASSERT_EQ(s_.blocks().references(block), 1u) << "a step writes into a block another holds";
                if (m.want[p]) {
                    ASSERT_LT(logit, step.logit_rows.size());
                    ASSERT_EQ(step.logit_rows[logit++], row);
                    ++wanted;
                }
            }
            ASSERT_EQ(s.logit_rows, wanted);
        }
        ASSERT_EQ(logit, step.logit_rows.size());
        ASSERT_EQ(step.max_q_len, longest);
    }

    // The pool against the tables, and the cache model against every sequence's tokens.
    void check_state() {
        const std::uint32_t bs = o_.block_size;
        std::map<std::uint32_t, std::vector<std::pair<SequenceId, std::uint32_t>>> owners;  // block: (seq, logical)
        for (const auto& [id, m] : seqs_) {
            const BlockTable& t = s_.table(id);
            const std::uint32_t computed = s_.position(id);
            ASSERT_EQ(s_.tokens(id), m.tokens);
            ASSERT_EQ(t.end(), (computed + bs - 1) / bs) << "blocks held past the computed tokens";
            if (o_.window != 0) {
                ASSERT_LE(t.held(), o_.table_blocks) << "a ring holds more blocks than it has entries";
            }
            if (computed > 0) {
                ASSERT_EQ(s_.chunk_ends(id).back(), computed);
            }
            for (std::uint32_t b = t.first(); b < t.end(); ++b) {
                owners[t.block(b)].emplace_back(id, b);
            }
            for (std::uint32_t p = t.first() * bs; p < computed; ++p) {
                ASSERT_EQ(cache_[t.block(p / bs) * bs + p % bs], (Key{m.tokens[p], p}))
                    << "sequence " << id << "'s key at position " << p << " was overwritten or never written";
            }
        }
        // A cached block holds the keys of its tokens at its positions, for whoever takes it.
        std::map<std::uint32_t, std::uint32_t> cached;  // block: the cache's references
        if (const PrefixCache* cache = s_.prefix_cache()) {
            for (const auto& [hash, e] : cache->entries()) {
                ASSERT_EQ(cached[e.block]++, 0u) << "block " << e.block << " cached under two hashes";
                for (std::uint32_t i = 0; i < bs; ++i) {
                    ASSERT_EQ(cache_[e.block * bs + i], (Key{e.tokens[i], e.index * bs + i}))
                        << "cached block " << e.block << " lost its key " << i;
                }
            }
        }
        for (std::uint32_t block = 0; block < o_.blocks; ++block) {
            auto it = owners.find(block);
            const std::size_t n = (it == owners.end() ? 0 : it->second.size()) + (cached.contains(block) ? 1 : 0);
            ASSERT_EQ(s_.blocks().references(block), n) << "block " << block << ": references against holders";
            if (it == owners.end()) {
                continue;
            }
            // A block two sequences hold holds the same tokens for both, where both computed them.
            for (std::size_t i = 1; i < it->second.size(); ++i) {
                const auto [a, la] = it->second[0];
                const auto [b, lb] = it->second[i];
                ASSERT_EQ(la, lb) << "block " << block << " at different positions of two sequences";
                const std::uint32_t end = std::min({s_.position(a), s_.position(b), (la + 1) * bs});
                for (std::uint32_t p = la * bs; p < end; ++p) {
                    ASSERT_EQ(seqs_.at(a).tokens[p], seqs_.at(b).tokens[p]) << "block " << block << " shared";
                }
            }
        }
        std::set<std::uint32_t> held;
        for (const auto& [block, holders] : owners) {
            held.insert(block);
        }
        for (const auto& [block, refs] : cached) {
            held.insert(block);
        }
        ASSERT_EQ(s_.blocks().used(), held.size()) << "blocks leaked";
    }

    SchedulerOptions o_;
    Scheduler s_;
    std::mt19937_64 rng_;
    std::map<SequenceId, Mirror> seqs_;
    std::vector<std::vector<std::uint32_t>> gone_;  // the tokens of the last sequences removed
    std::vector<Key> cache_;                        // per KV slot
    Coverage& coverage_;
};

TEST(SchedulerProperty, RandomCallsKeepBlocksTablesAndKeysConsistent) {
    std::mt19937_64 configs(41);
    Coverage coverage;
    for (std::uint64_t run = 0; run < 400; ++run) {
        const SchedulerOptions o = random_options(configs);
        SCOPED_TRACE(::testing::Message()
                     << "run " << run << ": " << o.blocks << " blocks of " << o.block_size << ", chunk " << o.chunk
                     << ", " << o.max_sequences << " sequences, window " << o.window << ", limit " << o.sequence_limit
                     << (o.share_prefixes ? ", sharing" : "") << (o.cache_prefixes ? ", caching" : ""));
        Checker(o, 1000 + run, coverage).run(120);
        if (::testing::Test::HasFatalFailure()) {
            return;
        }
    }
    std::printf(
        "%llu steps (%llu ran rows), %llu rows, %llu blocked, %llu deferred, %llu block copies, %llu shared prefixes, "
        "%llu ring blocks returned, %llu tokens from the prefix cache, %llu evictions\n",
        static_cast<unsigned long long>(coverage.steps), static_cast<unsigned long long>(coverage.ran),
        static_cast<unsigned long long>(coverage.rows), static_cast<unsigned long long>(coverage.blocked),
        static_cast<unsigned long long>(coverage.deferred), static_cast<unsigned long long>(coverage.copies),
        static_cast<unsigned long long>(coverage.shared), static_cast<unsigned long long>(coverage.ring_releases),
        static_cast<unsigned long long>(coverage.cache_hit_tokens),
        static_cast<unsigned long long>(coverage.evictions));
    EXPECT_GT(coverage.blocked, 100u);
    EXPECT_GT(coverage.deferred, 100u);
    EXPECT_GT(coverage.copies, 100u);
    EXPECT_GT(coverage.shared, 100u);
    EXPECT_GT(coverage.ring_releases, 100u);
    EXPECT_GT(coverage.cache_hit_tokens, 100u);
    EXPECT_GT(coverage.evictions, 100u);
}

}  // namespace
}  // namespace vkf::test
