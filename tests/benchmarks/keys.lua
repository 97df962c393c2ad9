-- wrk script: the same POST with a JSON body read from BODY_FILE, each request under the
-- next of KEYS API keys (KEY_PREFIX0, KEY_PREFIX1, ...), so a balancer spreads the tenants.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
local body = f:read("*a")
f:close()
local prefix = os.getenv("KEY_PREFIX") or "bench-"
local count = tonumber(os.getenv("KEYS") or "64")
local n = 0

request = function()
  n = n + 1
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["X-Api-Key"] = prefix .. (n % count)
  return wrk.format("POST", nil, headers, body)
end
