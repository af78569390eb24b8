// GET /script.js: the web tracker (version 2). Sends a pageview on load, when the path
// changes through history navigation (or the hash, with data-hash) and on a back/forward
// cache restore; exposes window.sextant(name, props) for custom events (calls made before
// it loaded are queued) and sextant("pageview", {u, props}) for manual page views; and,
// each switched on by an attribute, outbound link clicks, file downloads and tagged
// elements and forms. Posts with navigator.sendBeacon as text/plain (a simple CORS
// request), falling back to fetch with keepalive, so a click that leaves the page is
// never held back. No cookies and no storage: it only reads localStorage.sextant_ignore
// (the owner's opt-out). Kept under 2 KB gzipped (a test checks; docs/ingest.md gives the
// size and every attribute).
//
// Use: <script defer src="https://stats.example.com/script.js" data-key="wk_..."></script>
// Optional attributes: data-api (a proxy), data-hash, data-manual, data-props,
// data-exclude, data-outbound-links, data-file-downloads, data-tagged-events.
//
// Written by hand in a compact style (there is no build step for it); String.raw keeps
// the regular expressions' backslashes as they are.

export const TRACKER_JS = String.raw`(function(){"use strict";
var w=window,d=document,l=w.location,n=w.navigator,s=d.currentScript;
if(!s)return;
function a(x){return s.getAttribute("data-"+x)}
function on(t,f,o){(o||d).addEventListener(t,f,true)}
var k=a("key"),ep=a("api")||new URL(s.src).origin+"/v1/event",hs=a("hash")!==null,man=a("manual")!==null,
ob=a("outbound-links")!==null,tg=a("tagged-events")!==null,fd=a("file-downloads"),dp=null,last,
ft=fd!==null&&("pdf,zip,dmg,exe,csv,docx,xlsx,pptx,mp3,mp4,"+fd).toLowerCase().split(/[\s,.]+/),
ex=(a("exclude")||"").split(",").filter(function(p){return p.trim()}).map(function(p){
return new RegExp("^"+p.trim().replace(/[.+?^$|()[\]{}\\]/g,"\\$&").replace(/\*\*?/g,function(m){return m[1]?".*":"[^/]*"})+"/?$")});
try{dp=JSON.parse(a("props"));if(typeof dp!="object"||Array.isArray(dp))dp=null}catch(e){}
function mg(x,y){var r=null,i;for(i in x)(r=r||{})[i]=x[i];for(i in y)(r=r||{})[i]=y[i];return r}
function send(name,props,u){
try{if(localStorage.sextant_ignore=="true")return}catch(e){}
try{u=new URL(u||l.href,l.href)}catch(e){return}
if(!k||n.webdriver)return;
for(var i=0;i<ex.length;i++)if(ex[i].test(u.pathname))return;
var b=JSON.stringify({k:k,n:String(name),u:u.href,r:d.referrer||null,w:w.screen&&w.screen.width,p:props||null});
try{if(n.sendBeacon&&n.sendBeacon(ep,new Blob([b],{type:"text/plain"})))return}catch(e){}
try{fetch(ep,{method:"POST",body:b,headers:{"Content-Type":"text/plain"},keepalive:true,credentials:"omit",mode:"cors"}).catch(function(){})}catch(e){}
}
function pageview(){var c=l.pathname+(hs?l.hash:"");if(man||c===last)return;last=c;send("pageview",dp)}
var h=w.history;
function wrap(m){var f=h[m];h[m]=function(){var r=f.apply(this,arguments);pageview();return r}}
if(h&&h.pushState){wrap("pushState");wrap("replaceState");on("popstate",function(){pageview()},w)}
if(hs)on("hashchange",function(){pageview()},w);
on("pageshow",function(e){if(e&&e.persisted){last=null;pageview()}},w);
function tag(el){var c=el.classList,nm,p={},m,i;
for(i=0;c&&i<c.length;i++)if(m=/^sextant-event-(.+?)=(.+)/.exec(c[i])){m[2]=m[2].replace(/\+/g," ");if(m[1]=="name")nm=m[2];else p[m[1]]=m[2]}
return nm&&[nm,p]}
function click(e){
for(var t=e.target,lk,tt,f;t&&t.tagName;t=t.parentNode){
if(t.tagName=="FORM")f=1;
if(tg&&!f&&!tt)tt=tag(t);
if(!lk&&t.tagName=="A"&&t.href)lk=t}
if(e.type=="auxclick"&&(e.button!=1||!lk))return;
if(tt)return send(tt[0],tt[1]);
if(!lk)return;
var x=/\.([^./]+)$/.exec(lk.pathname);
if(ft&&x&&ft.indexOf(x[1].toLowerCase())>=0)send("file_download",{url:lk.href.split(/[?#]/)[0]});
else if(ob&&lk.host!=l.host&&/^http/.test(lk.protocol))send("outbound_click",{url:lk.href})}
if(ob||ft||tg){on("click",click);on("auxclick",click)}
if(tg)on("submit",function(e){var t=tag(e.target);t&&send(t[0],t[1])});
var q=w.sextant&&w.sextant.q||[];
w.sextant=function(name,o){if(name=="pageview"){o=o||{};send(name,mg(dp,o.props),o.u)}else send(name,o)};
for(var i=0;i<q.length;i++)w.sextant(q[i][0],q[i][1]);
if(d.visibilityState==="prerender")d.addEventListener("visibilitychange",function f(){if(d.visibilityState==="visible"){d.removeEventListener("visibilitychange",f);pageview()}});
else pageview();
})();
`;
