-- wrk script: the POST of BODY_FILE under KEYS API keys in turn (KEY_PREFIX0, KEY_PREFIX1,
-- ...), ending wrk once LIMIT answers came (a fill of a known size, not a duration: wrk's
-- own thread:stop() still waits out the duration). wrk prints nothing then.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
local body = f:read("*a")
f:close()
local prefix = os.getenv("KEY_PREFIX") or "bench-"
local count = tonumber(os.getenv("KEYS") or "1")
local limit = tonumber(os.getenv("LIMIT") or "1000")
local sent, answered = 0, 0

request = function()
  sent = sent + 1
  local headers = {}
  headers["Content-Type"] = "application/json"
  headers["X-Api-Key"] = prefix .. (sent % count)
  return wrk.format("POST", nil, headers, body)
end

response = function(status, headers, body)
  answered = answered + 1
  if answered >= limit then
    os.exit(0)
  end
end
