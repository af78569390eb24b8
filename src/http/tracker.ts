// GET /script.js: the web tracker. Sends a pageview on load and on history navigation,
// exposes window.sextant(name, props) for custom events, and posts with
// navigator.sendBeacon as text/plain (a simple CORS request), falling back to fetch
// with keepalive. Kept under 2 KB gzipped (a test checks).
//
// Use: <script defer src="https://stats.example.com/script.js" data-key="wk_..."></script>
// Optional: data-api="https://example.com/proxy/event" to send through your own proxy.

export const TRACKER_JS = `(function(){"use strict";
var w=window,d=document,l=w.location,n=w.navigator,s=d.currentScript;
if(!s)return;
var k=s.getAttribute("data-key"),api=s.getAttribute("data-api")||new URL(s.src).origin+"/v1/event",last=null;
function send(name,props){
if(!k||n.webdriver)return;
var b=JSON.stringify({k:k,n:String(name),u:l.href,r:d.referrer||null,w:w.screen&&w.screen.width,p:props||null});
try{if(n.sendBeacon&&n.sendBeacon(api,new Blob([b],{type:"text/plain"})))return}catch(e){}
try{fetch(api,{method:"POST",body:b,headers:{"Content-Type":"text/plain"},keepalive:true,credentials:"omit",mode:"cors"}).catch(function(){})}catch(e){}
}
function pageview(){if(l.href===last)return;last=l.href;send("pageview")}
var h=w.history;
if(h&&h.pushState){var push=h.pushState;h.pushState=function(){var r=push.apply(this,arguments);pageview();return r};
var rep=h.replaceState;h.replaceState=function(){var r=rep.apply(this,arguments);pageview();return r};
w.addEventListener("popstate",pageview)}
if(s.getAttribute("data-hash")!==null)w.addEventListener("hashchange",pageview);
var q=w.sextant&&w.sextant.q||[];
w.sextant=function(name,props){send(name,props)};
for(var i=0;i<q.length;i++)send(q[i][0],q[i][1]);
if(d.visibilityState==="prerender")d.addEventListener("visibilitychange",function f(){if(d.visibilityState==="visible"){d.removeEventListener("visibilitychange",f);pageview()}});
else pageview();
})();
`;
