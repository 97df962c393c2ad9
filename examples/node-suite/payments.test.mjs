// Ten tests against one `payemu serve`, each with a fresh tenant: run with `node --test`.
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, test } from "node:test";

import { Tenant, startPayemu } from "./payemu.mjs";

const CARD = { cardHolderName: "Ada", cardNumber: "4242424242424242", expirationMonth: 12, expirationYear: 2030 };
const MOCK = { paymentGatewayName: "NULLSuccess", credentials: [] };

let payemu;
let tenant;

before(async () => {
  payemu = await startPayemu();
});
after(async () => {
  await payemu?.stop();
});
beforeEach(async () => {
  tenant = await Tenant.create(payemu.url);
});
afterEach(async () => {
  await tenant.remove();
});

function charge(amount, card = CARD) {
  return tenant.call("POST", "/PaymentGateway/charge", {
    amount, currency: "USD", card, paymentGatewayAccount: MOCK,
  });
}

test("a fresh tenant answers its own key", async () => {
  const { status, body } = await tenant.call("GET", "/Utils/apiKey");
  assert.equal(status, 200);
  assert.equal(body.userName, tenant.userName);
  assert.equal(body.isSandbox, true);
});

test("a charge on the mock gateway succeeds", async () => {
  const { status, body } = await charge(10.5);
  assert.equal(status, 200);
  assert.equal(body.operationResultCode, "Success");
  assert.equal(body.amount, 10.5);
  assert.equal(body.currency, "USD");
});

test("a scenario rule declines the card it names", async () => {
  const [rule] = (await tenant.addScenario({
    name: "no-funds",
    when: { cardNumber: CARD.cardNumber, gateway: "NULLSuccess" },
    then: { operationResultCode: "Rejected", rejectReasonCode: "InsufficientFunds" },
  })).rules;
  assert.equal(rule.source, "runtime");
  const { status, body } = await charge(42);
  assert.equal(status, 409);
  assert.equal(body.operationResultCode, "Rejected");
  assert.equal(body.rejectReasonCode, "InsufficientFunds");
});

test("a sequence answers a temporary failure, then success", async () => {
  await tenant.addScenario({
    name: "flaky",
    when: { cardNumber: CARD.cardNumber, gateway: "NULLSuccess" },
    sequence: [{ operationResultCode: "TemporaryFailure" }, { operationResultCode: "Success" }],
  });
  assert.equal((await charge(5)).status, 503);
  assert.equal((await charge(5)).status, 200);
});

test("a removed rule no longer applies", async () => {
  await tenant.addScenario({
    name: "declines", when: { gateway: "NULLSuccess" }, then: { operationResultCode: "Rejected" },
  });
  assert.equal((await charge(7)).status, 409);
  assert.deepEqual((await tenant.removeScenario("declines")).removed, ["declines"]);
  assert.equal((await charge(7)).status, 200);
});

test("a tenant's rules do not reach another tenant", async () => {
  await tenant.addScenario({
    name: "mine", when: { gateway: "NULLSuccess" }, then: { operationResultCode: "Rejected" },
  });
  const other = await Tenant.create(payemu.url);
  try {
    const answer = await other.call("POST", "/PaymentGateway/charge", {
      amount: 3, currency: "USD", card: CARD, paymentGatewayAccount: MOCK,
    });
    assert.equal(answer.status, 200);
    assert.equal(await other.count(), 1);
  } finally {
    await other.remove();
  }
});

test("the clock moves forward for this tenant only", async () => {
  const moved = await tenant.advanceClock("8d");
  assert.equal(moved.offset, 8 * 86400);
  const other = await Tenant.create(payemu.url);
  try {
    assert.equal((await other.control("GET", "/clock")).offset, 0);
  } finally {
    await other.remove();
  }
});

test("the journal counts what the test sent", async () => {
  await charge(1);
  await charge(2);
  await tenant.call("GET", "/Utils/apiKey");
  assert.equal(await tenant.count(), 3);
  assert.equal(await tenant.count({ path: "/PaymentGateway/charge" }), 2);
});

test("the journal keeps each answer's status, oldest first", async () => {
  await tenant.addScenario({
    name: "once", when: { gateway: "NULLSuccess", amount: 9 }, then: { operationResultCode: "Rejected" },
  });
  await charge(9);
  await charge(8);
  const entries = await tenant.requests({ path: "/PaymentGateway/charge" });
  assert.deepEqual(entries.map((entry) => entry.status), [409, 200]);
  assert.ok(entries.every((entry) => !JSON.stringify(entry).includes(CARD.cardNumber)), "no full card number");
});

test("a removed tenant's key is refused", async () => {
  const gone = await Tenant.create(payemu.url);
  await gone.remove();
  const { status, body } = await gone.call("GET", "/Utils/apiKey");
  assert.equal(status, 401);
  assert.equal(body[0].fieldName, "X-Api-Key");
});
