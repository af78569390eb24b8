-- One web event per request, as the tracker sends it; a random client address per
-- request (the server trusts X-Forwarded-For in the bench) so per-address limits do not
-- turn the run into a 429 test.
wrk.method = "POST"
wrk.body = '{"k":"' .. os.getenv("SITE_KEY") .. '","n":"pageview","u":"https://example.com/pricing?utm_source=bench","r":"https://www.google.com/","w":1280}'
wrk.headers["Content-Type"] = "text/plain"
wrk.headers["Origin"] = "https://example.com"
wrk.headers["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
math.randomseed(os.time())
request = function()
  wrk.headers["X-Forwarded-For"] = math.random(1, 223) .. "." .. math.random(0, 255) .. "." .. math.random(0, 255) .. "." .. math.random(1, 254)
  return wrk.format()
end
