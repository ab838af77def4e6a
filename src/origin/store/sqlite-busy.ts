// Which SQLite errors mean "another connection holds the lock" (shared by the store and its writer thread:
// sqlite-writer.ts must not be imported for values, its top level is the thread's body).

/** SQLITE_BUSY (5) or SQLITE_LOCKED (6), extended codes included: the store is busy, not broken. */
export function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown } | undefined)?.errcode;
  return typeof code === "number" && ((code & 0xff) === 5 || (code & 0xff) === 6);
}
