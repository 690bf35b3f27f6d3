/*
 * Replacing segments by a cleaned one, crash-safe, in the file names
 * Kafka uses. The cleaner writes <base>.log.cleaned (and .index.cleaned,
 * .timeindex.cleaned), syncs them, and under the partition lock renames
 * them to .swap (indexes first, the .log last: a <base>.log.swap means the
 * cleaned segment is whole), then removes the old segments it covers and
 * renames the .swap files to their final names (the .log last).
 *
 * Recovery finishes any swap whose .log.swap exists: the old segments
 * with a base from the cleaned segment's base up to its last offset go,
 * and it takes the first one's name. Old segments after its last batch
 * (whose every record the cleaning dropped) may stay if the swap was cut
 * short: they hold only records that later ones supersede, at offsets the
 * cleaned segment does not have, so no record is doubled and no key's
 * latest value lost; the next cleaning drops them. .cleaned files and
 * .swap indexes without their .log.swap are dropped: the log holds the old
 * segments or the new one.
 */
#ifndef RN_STORAGE_SWAP_H
#define RN_STORAGE_SWAP_H

#include <stddef.h>
#include <stdint.h>

#define RN_SWAP_CLEANED ".cleaned"
#define RN_SWAP_SWAP ".swap"

/* "<base><suffix><state>", e.g. 000...42.log.cleaned. */
void rn_swap_name(char *buf, size_t len, int64_t base, const char *suffix,
    const char *state);

/* Remove a segment's .cleaned files (an abandoned cleaning). */
void rn_swap_discard(int dirfd, int64_t base);

/* .cleaned -> .swap, the .log last, then sync the directory. */
int rn_swap_promote(int dirfd, int64_t base);

/*
 * Replace the segments olds[0..n) (olds[0] == base, ascending) by the
 * .swap files of base. Lock held. 0 or -errno (a failure part-way is
 * finished by rn_swap_recover).
 */
int rn_swap_install(int dirfd, int64_t base, const int64_t *olds, int n);

/*
 * Finish interrupted swaps and drop leftovers (lock held, or the log not
 * yet in use). Returns the number of swaps finished or -errno.
 */
int rn_swap_recover(int dirfd);

/*
 * Drop what an interrupted cleaning left and no swap needs: .cleaned files
 * and .swap indexes without their .log.swap (the cleaner, lock held).
 */
void rn_swap_drop_leftovers(int dirfd);

/* Test hook: RUNNEL_CLEANER_CRASH_FILE names a file; when it holds step,
 * it is removed and the process killed (crash tests only). */
void rn_swap_crash_point(const char *step);

#endif /* RN_STORAGE_SWAP_H */
