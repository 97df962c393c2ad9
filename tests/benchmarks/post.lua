-- wrk script: every request is the same POST with a JSON body read from BODY_FILE.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
wrk.method = os.getenv("METHOD") or "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("API_KEY") or "sandbox-api-key"
if os.getenv("FORWARDED_FOR") then
  wrk.headers["X-Forwarded-For"] = os.getenv("FORWARDED_FOR")  -- as behind deploy/haproxy.cfg
end
