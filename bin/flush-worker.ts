// Entry of the partition writer's worker thread inside the compiled executable (see
// bin/wal-worker.ts for why it sits beside bin/sextant.ts).
import "../src/store/flush-worker.ts";
