// The row reductions of the tiled kernel (attention.comp, included after its constants): each
// tile's row max and the final row sum over the TPR lanes of a row, and the probabilities P*V
// reads from the lane that computed them. Either by subgroup shuffles (SUBGROUP_REDUCE: a
// shuffle-XOR butterfly over the row's lanes, and subgroupShuffle) or through shared memory
// (lane_stats and p_tile, one barrier more per tile); SUBGROUP_ANY_SIZE has both and takes the
// shuffles where subgroup_numbering_holds() says the driver's subgroups allow them (docs/
// DESIGN.md, "Subgroup reductions in the tiled kernel"). sg_path says which: a constant in the
// other variants, so that their code is that of one path alone.

#if !defined(SUBGROUP_REDUCE) || defined(SUBGROUP_ANY_SIZE)
// Softmax numerators of the current tile, one row of PS floats per query row. Lane l of row
// r writes columns l + i * TPR, and P*V reads column c of every row at once; a subgroup of 32
// holds the R = 32 / TPR rows r0 .. r0 + R - 1. With the stride BC (32 or 64) the R rows of a
// column share one of the 32 banks (of 4 bytes): R-way conflicts on reads and writes. A
// stride that is an odd multiple of TPR (BC, or BC + TPR when BC / TPR is even) starts row r
// at bank TPR * (r * PS / TPR mod R), different for each of the R rows, so a read's R
// addresses and a write's R x TPR addresses all fall in different banks (TPR is a power of
// two up to 32). host/ops/attention.cpp's tile_shared_bytes counts the padding.
#define SHARED_REDUCE
const uint PS = BC + TPR * (1u - (BC / TPR) % 2u);
shared float p_tile[BR * PS];
shared float lane_stats[BR * TPR];  // per-lane maxima, then per-lane sums
#endif

#if defined(SUBGROUP_ANY_SIZE)
// Tests (VKF_ATTN_SG_EXPECT_*): the path the check must choose; a workgroup that took the
// other writes nothing (writes_output()), so that the output poisoned before the run shows it.
layout(constant_id = VKF_ATTN_SPEC_SG_EXPECT) const uint SG_EXPECT = VKF_ATTN_SG_EXPECT_EITHER;
shared uint numbering_broken;
bool sg_path;  // set once, first thing in main()

// Whether gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID numbers the invocations
// 0 .. WG - 1 with every row's TPR lanes consecutive and TPR-aligned in one subgroup, as the
// butterflies need. Without a required size a driver may run partial subgroups (fewer active
// invocations than gl_SubgroupSize, e.g. a workgroup narrower than it, or hardware narrower
// than the size it reports). It holds when every subgroup is full (its active invocations,
// counted before any divergence, are gl_SubgroupSize), gl_NumSubgroups of them make the
// workgroup, and TPR divides the size: the (subgroup, lane) pairs are then WG distinct numbers
// below WG, and a TPR-aligned run of TPR lanes never crosses a subgroup. (gl_SubgroupSize is
// a power of two, Vulkan's rule, so no other size needs excluding.) Each subgroup judges
// itself; a shared flag between two barriers makes the answer the workgroup's, so that every
// branch on it is uniform and the barriers inside stay in uniform control flow even where the
// subgroups would disagree.
bool subgroup_numbering_holds() {
    if (gl_LocalInvocationIndex == 0u) {
        numbering_broken = 0u;
    }
    barrier();
    const uint size = gl_SubgroupSize;
    const bool holds = subgroupAdd(1u) == size && gl_NumSubgroups * size == WG && size % TPR == 0u;
    if (!holds) {
        atomicOr(numbering_broken, 1u);
    }
    barrier();
    return numbering_broken == 0u;
}

bool writes_output() {
    return SG_EXPECT == VKF_ATTN_SG_EXPECT_EITHER || sg_path == (SG_EXPECT == VKF_ATTN_SG_EXPECT_SUBGROUP);
}
#else
#if defined(SUBGROUP_REDUCE)
const bool sg_path = true;
#else
const bool sg_path = false;
#endif
bool writes_output() {
    return true;
}
#endif

// The invocation's place in the workgroup (row tid / TPR, lane tid % TPR). The subgroup path
// numbers invocations by subgroup, so that a row's lanes are consecutive and TPR-aligned in
// one subgroup whatever order the driver gives subgroups within the workgroup.
uint invocation_index() {
#if defined(SUBGROUP_REDUCE)
    if (sg_path) {
        return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    }
#endif
    return gl_LocalInvocationID.x;
}

// The subgroup lane of the row's lane 0 (subgroup path).
uint row_first_lane() {
#if defined(SUBGROUP_REDUCE)
    return gl_SubgroupInvocationID - gl_SubgroupInvocationID % TPR;
#else
    return 0u;
#endif
}

#if defined(SUBGROUP_REDUCE)
// Over the TPR lanes of this invocation's row: a butterfly of log2(TPR) shuffles leaves the
// result in every lane. The max is exact in any order, so every lane rescales by the same factor.
float row_max_of(float x) {
    for (uint m = 1u; m < TPR; m *= 2u) {
        x = max(x, subgroupShuffleXor(x, m));
    }
    return x;
}
float row_sum_of(float x) {
    for (uint m = 1u; m < TPR; m *= 2u) {
        x += subgroupShuffleXor(x, m);
    }
    return x;
}
#endif

// The tile's max over the row, in two steps around the barrier that follows the scores: the
// subgroup path has it at once; the shared path stores each lane's and reads the row's after.
float tile_max_publish(uint row_local, uint lane, float lane_max) {
#if defined(SUBGROUP_REDUCE)
    if (sg_path) {
        return row_max_of(lane_max);
    }
#endif
#if defined(SHARED_REDUCE)
    lane_stats[row_local * TPR + lane] = lane_max;
#endif
    return lane_max;
}
float tile_max_collect(uint row_local, float published) {
#if defined(SHARED_REDUCE)
    if (!sg_path) {
        float tile_max = MASKED;
        for (uint l = 0u; l < TPR; ++l) {
            tile_max = max(tile_max, lane_stats[row_local * TPR + l]);
        }
        return tile_max;
    }
#endif
    return published;
}

// Tile key c's probability for P*V (the subgroup path keeps it in the lane's own_scores).
void keep_probability(uint row_local, uint c, float p) {
#if defined(SHARED_REDUCE)
    if (!sg_path) {
        p_tile[row_local * PS + c] = p;
    }
#endif
}

// Whether the lane runs P*V on this tile: on the subgroup path the whole subgroup does when
// any row of it has keys, as the shuffles read lanes of other rows' branches.
bool pv_needed(bool tile_has_keys) {
#if defined(SUBGROUP_REDUCE)
    if (sg_path) {
        return subgroupMax(tile_has_keys ? 1u : 0u) != 0u;
    }
#endif
    return tile_has_keys;
}

// The probability of tile key c = i * TPR + l, which lane l of the row holds as own_scores[i]
// (`own`: this lane's).
float probability_of(uint row_local, uint row_lane0, float own, uint l, uint c) {
#if defined(SUBGROUP_REDUCE)
    if (sg_path) {
        return subgroupShuffle(own, row_lane0 + l);
    }
#endif
#if defined(SHARED_REDUCE)
    return p_tile[row_local * PS + c];
#else
    return 0.0;  // not reached
#endif
}

// The row's sum of its lanes' partial sums, in every lane of the row.
float row_sum_of_lanes(uint row_local, uint lane, float lane_sum) {
#if defined(SHARED_REDUCE)
    if (!sg_path) {
        barrier();  // lane_stats no longer read by the last tile
        lane_stats[row_local * TPR + lane] = lane_sum;
        barrier();
        float row_sum = 0.0;
        for (uint l = 0u; l < TPR; ++l) {
            row_sum += lane_stats[row_local * TPR + l];
        }
        return row_sum;
    }
#endif
#if defined(SUBGROUP_REDUCE)
    return row_sum_of(lane_sum);
#else
    return 0.0;  // not reached
#endif
}
