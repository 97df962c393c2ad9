// payemu for a node:test suite: one `payemu serve --port 0 --ready-file …` for the whole
// run (or the one at PAYEMU_URL), and a fresh tenant for each test through the control API.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export async function startPayemu({ command = process.env.PAYEMU_COMMAND || "payemu", timeoutMs = 30000 } = {}) {
  if (process.env.PAYEMU_URL) return { url: process.env.PAYEMU_URL.replace(/\/$/, ""), stop: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), "payemu-"));
  const readyFile = join(dir, "ready.json");
  const args = ["serve", "--port", "0", "--no-card-form", "--log-level", "warning", "--ready-file", readyFile];
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"] });
  let exited = null;
  child.on("exit", (code) => { exited = code; });
  child.on("error", (error) => { exited = error; });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      // written whole once payemu answers requests: no retry loop against the port
      const { url } = JSON.parse(await readFile(readyFile, "utf8"));
      const stop = async () => {
        if (exited === null) {
          child.kill("SIGTERM");
          await new Promise((resolve) => child.once("exit", resolve));
        }
        await rm(dir, { recursive: true, force: true });
      };
      return { url, stop };
    } catch (error) {
      if (error.code !== "ENOENT") throw error;
    }
    if (exited !== null) throw new Error(`payemu exited before it was ready: ${exited}`);
    if (Date.now() > deadline) throw new Error("payemu was not ready in time");
    await sleep(20);
  }
}

// One isolated tenant: its own key, accounts, ledger, scenarios, clock and journal.
export class Tenant {
  static async create(url) {
    const response = await fetch(`${url}/_emulator/tenants`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ sandbox: true }),
    });
    if (response.status !== 201) throw new Error(`new tenant: ${response.status} ${await response.text()}`);
    return new Tenant(url, await response.json());
  }

  constructor(url, described) {
    this.url = url;
    this.apiKey = described.apiKey;
    this.userName = described.userName;
  }

  async call(method, path, body) {
    const headers = { "X-Api-Key": this.apiKey };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(this.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }

  async control(method, path, body, expect = 200) {
    const answer = await this.call(method, `/_emulator${path}`, body);
    if (answer.status !== expect) {
      throw new Error(`${method} /_emulator${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    return answer.body;
  }

  addScenario(rules) {
    return this.control("POST", "/scenarios", rules, 201);
  }

  removeScenario(name) {
    return this.control("DELETE", `/scenarios/${name}`);
  }

  advanceClock(by) {
    return this.control("POST", "/clock", { advance: by });
  }

  async requests(filters = {}) {
    const query = new URLSearchParams(filters).toString();
    return (await this.control("GET", `/requests${query ? `?${query}` : ""}`)).requests;
  }

  // GET /_emulator/requests/count where this payemu has it, else the entries counted here
  async count(filters = {}) {
    const query = new URLSearchParams(filters).toString();
    const answer = await this.call("GET", `/_emulator/requests/count${query ? `?${query}` : ""}`);
    if (answer.status === 200) return answer.body.count;
    return (await this.requests(filters)).length;
  }

  async remove() {
    await this.control("DELETE", "/tenants/current", undefined, 204);
  }
}
