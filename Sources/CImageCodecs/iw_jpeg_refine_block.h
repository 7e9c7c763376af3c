/* The block decoder of iw_jpeg_refine.c, written once and compiled there twice: portable, and with
 * BMI2's instructions where the CPU has them fast (intrinsics compile only into a function built
 * for BMI2). Before each inclusion the includer names the function (IW_REFINE_NAME, its
 * IW_REFINE_GATHER helper), its attributes (IW_REFINE_ATTR) and the two bit steps that differ:
 * IW_NTH_SET(mask, n), the nth lowest set bit of mask (0 when it has no more), and
 * IW_DEPOSIT(bits, mask), the low bits of `bits` placed on the set bits of `mask`, lowest first.
 *
 * decode_mcu_AC_refine's block: a run's end is the nth zero after k; the correction bits of the
 * nonzero coefficients a run passes are read at once and deposited on them in `grow`, applied at
 * the block's end (nothing else reads those coefficients in between, and they stay nonzero).
 * Returns 0 (with any coefficient it made nonzero zeroed again) where libjpeg's decoder must take
 * the block. */

/* Appends the correction bits of the coefficients of `mask` (read in zigzag order) to `grow`: a
 * coefficient whose bit is 1 will grow. */
IW_REFINE_ATTR IW_INLINE int IW_REFINE_GATHER(struct iw_bits *b, uint64_t mask, uint64_t *grow) {
    int count = __builtin_popcountll(mask);
    while (count > 0) {
        int n = count < 32 ? count : 32;
        if (b->bits < n && !fill(b)) return 0;
        uint64_t first_lowest = reverse_bits((uint64_t)take_bits(b, n)) >> (64 - n);
        uint64_t part = n == count ? mask : IW_DEPOSIT(((uint64_t)1 << n) - 1, mask);
        *grow |= IW_DEPOSIT(first_lowest, part);
        mask &= ~part;
        count -= n;
    }
    return 1;
}

IW_REFINE_ATTR static int IW_REFINE_NAME(struct iw_bits *b, JCOEF *block, int Ss, int Se, int Al,
                                         const struct iw_derived_tbl *table, unsigned int *eob_run) {
    const int p1 = 1 << Al;
    const uint64_t band = band_through(Se);
    const uint64_t nonzero = nonzero_mask(block); /* stays right for indexes not yet reached */
    uint64_t grow = 0;
    unsigned int run = *eob_run;
    int made[DCTSIZE2 + 1];
    int made_count = 0;
    int k = Ss;
    if (run == 0) {
        while (k <= Se) {
            int r, value;
            int next = next_symbol(b, table, p1, &r, &value, &run);
            if (next == HAND_BACK) goto undo;
            if (next == END_OF_BAND) break;
            /* Past r zeros (and the nonzero ones among them) to the next zero, which gets the value. */
            const uint64_t ahead = band & (~(uint64_t)0 << k);
            const uint64_t pick = IW_NTH_SET(~nonzero & ahead, r); /* 0: past the band */
            const uint64_t passed = nonzero & ahead & (pick - 1);
            const int count = __builtin_popcountll(passed);
            if (count <= 32 && count <= b->bits) {
                /* Without a branch on whether there are any (often not): 0 bits deposit nothing. */
                b->bits -= count;
                uint64_t bits = (b->buffer >> b->bits) & (((uint64_t)1 << count) - 1);
                grow |= IW_DEPOSIT((reverse_bits(bits) >> 1) >> (63 - count), passed);
            } else if (!IW_REFINE_GATHER(b, passed, &grow)) {
                goto undo;
            }
            int target = pick ? __builtin_ctzll(pick) : Se + 1; /* past the band: at [Se + 1] */
            if (value) made[made_count++] = place(block, target, value);
            k = target + 1;
        }
    }
    if (run > 0) {
        /* In an end-of-band run: only the corrections of what is nonzero from k on. */
        if (k <= Se) {
            const uint64_t passed = nonzero & band & (~(uint64_t)0 << k);
            if (passed && !IW_REFINE_GATHER(b, passed, &grow)) goto undo;
        }
        run--;
    }
    while (grow) {
        int position = natural_order[__builtin_ctzll(grow)];
        grow &= grow - 1;
        block[position] = (JCOEF)(block[position] + growth(block[position], p1, 1));
    }
    *eob_run = run;
    return 1;
undo:
    while (made_count > 0) block[made[--made_count]] = 0;
    return 0;
}

#undef IW_REFINE_NAME
#undef IW_REFINE_GATHER
#undef IW_REFINE_ATTR
#undef IW_NTH_SET
#undef IW_DEPOSIT
