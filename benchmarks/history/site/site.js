/* history site: sortable, filterable tables and uPlot charts (assets/uPlot.iife.min.js), nothing fetched. */
(function(){
  function key(cell){var v=cell.getAttribute('data-sort'); if(v===null) v=cell.textContent.trim();
    var n=parseFloat(v); return isNaN(n)||v===''?{n:null,s:v.toLowerCase()}:{n:n,s:v};}
  function sortable(table){
    var body=table.tBodies[0], heads=table.tHead.rows[table.tHead.rows.length-1].cells;
    function sortBy(index,order){
      var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){var x=key(a.cells[index]),y=key(b.cells[index]),r;
        if(x.n===null&&y.n!==null) return 1; if(y.n===null&&x.n!==null) return -1;  /* no number: last */
        r=x.n!==null?x.n-y.n:(x.s<y.s?-1:x.s>y.s?1:0); return order==='desc'?-r:r;});
      rows.forEach(function(row){body.appendChild(row);});
      Array.prototype.forEach.call(heads,function(th,i){
        if(i===index) th.setAttribute('data-order',order); else th.removeAttribute('data-order');});
    }
    Array.prototype.forEach.call(heads,function(th,i){
      th.addEventListener('click',function(){sortBy(i,th.getAttribute('data-order')==='asc'?'desc':'asc');});});
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'),sortable);
  var filter=document.getElementById('filter');
  if(filter) filter.addEventListener('input',function(){var q=filter.value.toLowerCase();
    Array.prototype.forEach.call(document.querySelectorAll('table.sortable tbody tr'),function(row){
      row.style.display=row.textContent.toLowerCase().indexOf(q)<0?'none':'';});});

  var COLORS=['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#7f7f7f','#bcbd22','#17becf'];
  function fmt(v){return v===null||v===undefined?'-':Math.abs(v)>=100?v.toFixed(1):v.toPrecision(4);}
  /* spec: {id, title, x: [unix seconds], runs: [date and commit], series: [{label, values, marks: [x index]}]} */
  function chart(spec){
    var el=document.getElementById(spec.id); if(!el||typeof uPlot==='undefined') return;
    var info=document.createElement('div'); info.className='runinfo'; el.appendChild(info);
    var series=[{}].concat(spec.series.map(function(s,i){return {label:s.label,stroke:COLORS[i%COLORS.length],
      width:1.5,spanGaps:true,points:{show:spec.x.length<=60},value:function(u,v){return fmt(v);}};}));
    var opts={title:spec.title,width:Math.max(320,el.clientWidth||900),height:260,series:series,
      scales:{x:{time:true}},cursor:{drag:{x:true,y:false}},legend:{live:true},
      hooks:{
        setCursor:[function(u){var i=u.cursor.idx; info.textContent=i===null||i===undefined?'':
          'run '+spec.runs[i];}],
        draw:[function(u){var ctx=u.ctx; ctx.save();
          spec.series.forEach(function(s,k){(s.marks||[]).forEach(function(i){
            var v=s.values[i]; if(v===null) return;
            var x=u.valToPos(spec.x[i],'x',true), y=u.valToPos(v,'y',true);
            ctx.strokeStyle=COLORS[k%COLORS.length]; ctx.setLineDash([4,3]); ctx.lineWidth=1;
            ctx.beginPath(); ctx.moveTo(x,u.bbox.top); ctx.lineTo(x,u.bbox.top+u.bbox.height); ctx.stroke();
            ctx.setLineDash([]); ctx.fillStyle=COLORS[k%COLORS.length];
            ctx.beginPath(); ctx.arc(x,y,5*devicePixelRatio,0,2*Math.PI); ctx.fill();});});
          ctx.restore();}]}};
    var u=new uPlot(opts,[spec.x].concat(spec.series.map(function(s){return s.values;})),el);
    el.setAttribute('data-drawn','1'); el.uplot=u;
  }
  (window.SITE_CHARTS||[]).forEach(chart);
})();
