// Entry of the write-ahead log's worker thread inside the compiled executable: it must sit
// beside bin/sextant.ts so both land at the same root of the embedded file system, where
// src/durability/wal-writer.ts finds it as ./wal-worker.ts. From source, that path resolves
// to src/durability/wal-worker.ts instead.
import "../src/durability/wal-worker.ts";
