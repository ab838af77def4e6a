// Which SQLite errors mean "another connection holds the lock" or "the disk is full": the store is busy or
// out of room, not broken (shared by the store and its writer thread: sqlite-writer.ts must not be imported
// for values, its top level is the thread's body).

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6), extended codes included: the store is busy, not broken. */
export function isBusy(error: unknown): boolean {
  const code = sqliteResultCode(error);
  return code === 5 || code === 6;
}

/** SQLITE_FULL (13): the disk (or the database's size limit) is full; SQLite rolled the transaction back. */
export function isFull(error: unknown): boolean {
  return sqliteResultCode(error) === 13;
}

/** The primary result code (SQLITE_BUSY, …) of an error node:sqlite threw, extended codes folded; else undefined. */
export function sqliteResultCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown } | undefined)?.errcode;
  return typeof code === "number" ? code & 0xff : undefined;
}
