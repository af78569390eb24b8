// Entry of a query thread inside the compiled executable (see bin/wal-worker.ts for why it
// sits beside bin/sextant.ts).
import "../src/query/scan-worker.ts";
