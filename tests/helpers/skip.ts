// A test that cannot run on this machine (no root, no loop device...) must not pass quietly:
// the run's output says so in a line that stands out, naming the file and what is missing.

/** Prints the loud line for a skipped test file. */
export function warnSkipped(file: string, why: string): void {
  console.warn(`\n*** SKIPPED: ${file}: ${why} ***\n`);
}
