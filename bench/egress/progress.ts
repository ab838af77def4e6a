// A progress indicator on stderr: one line redrawn in place on a terminal, a line per 10% otherwise.

export class Progress {
  readonly #tty = process.stderr.isTTY === true;
  #lastDraw = 0;
  #lastDecile = -1;
  #label = "";
  #started = performance.now();

  start(label: string): void {
    this.#label = label;
    this.#started = performance.now();
    this.#lastDecile = -1;
    this.#lastDraw = 0;
  }

  update(done: number, total: number, detail = ""): void {
    const now = performance.now();
    const fraction = total === 0 ? 1 : done / total;
    const rate = done / Math.max(0.001, (now - this.#started) / 1000);
    if (this.#tty) {
      if (now - this.#lastDraw < 100 && done < total) return;
      this.#lastDraw = now;
      const width = 24;
      const filled = Math.round(fraction * width);
      const bar = "█".repeat(filled) + "░".repeat(width - filled);
      process.stderr.write(
        `\r\x1b[2K${this.#label.padEnd(22)} ${bar} ${String(Math.floor(fraction * 100)).padStart(3)}%  ${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}  ${Math.round(rate).toLocaleString("en-US")} req/s${detail ? `  ${detail}` : ""}`,
      );
    } else {
      const decile = Math.floor(fraction * 10);
      if (decile === this.#lastDecile) return;
      this.#lastDecile = decile;
      process.stderr.write(`${this.#label}: ${decile * 10}% (${done}/${total}, ${Math.round(rate)} req/s)${detail ? ` ${detail}` : ""}\n`);
    }
  }

  done(message: string): void {
    if (this.#tty) process.stderr.write("\r\x1b[2K");
    process.stderr.write(`${message}\n`);
  }

  note(message: string): void {
    if (this.#tty) process.stderr.write("\r\x1b[2K");
    process.stderr.write(`${message}\n`);
  }
}
