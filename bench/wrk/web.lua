-- One web event per request, as the tracker sends it, from a pool of 50,000 visitors
-- (the server trusts X-Forwarded-For in the bench): per-address limits stay out of the
-- way, and visits have several events as on a real site.
wrk.method = "POST"
wrk.body = '{"k":"' .. os.getenv("SITE_KEY") .. '","n":"pageview","u":"https://example.com/pricing?utm_source=bench","r":"https://www.google.com/","w":1280}'
wrk.headers["Content-Type"] = "text/plain"
wrk.headers["Origin"] = "https://example.com"
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
math.randomseed(os.time())
request = function()
  -- A visitor from a pool of 50,000: visits of several events, as on a real site.
  local v = math.random(1, 50000)
  wrk.headers["X-Forwarded-For"] = "10." .. (v % 200) .. "." .. (math.floor(v / 200) % 250) .. ".7"
  return wrk.format()
end
