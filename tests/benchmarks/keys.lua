-- wrk script: the same POST with a JSON body read from BODY_FILE, each request under the
-- next of KEYS API keys (KEY_PREFIX0, KEY_PREFIX1, ...), so a balancer spreads the tenants.
-- With LIMIT set, wrk ends once that many answers came (a fill of a known size, not a
-- duration: wrk's own thread:stop() still waits out the duration); it prints nothing then.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
local body = f:read("*a")
f:close()
local prefix = os.getenv("KEY_PREFIX") or "bench-"
local count = tonumber(os.getenv("KEYS") or "64")
local limit = tonumber(os.getenv("LIMIT") or "0")
local n, answered = 0, 0

request = function()
  n = n + 1
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["X-Api-Key"] = prefix .. (n % count)
  return wrk.format("POST", nil, headers, body)
end

if limit > 0 then
  response = function(status, headers, body)
    answered = answered + 1
    if answered >= limit then
      os.exit(0)
    end
  end
end
