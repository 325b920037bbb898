/* Tables with class "sortable": a click on a header sorts by that column (numbers as numbers, blanks last),
   and an input with id "filter" hides the rows that don't contain its text. Plain JavaScript, nothing fetched;
   aggregate.py's page inlines it, history's site ships it as an asset (results/html_style.table_script). */
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
})();
