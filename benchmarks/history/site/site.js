/* history site: the uPlot charts (assets/uPlot.iife.min.js; tables sort by assets/table_sort.js), nothing fetched. */
(function(){
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
