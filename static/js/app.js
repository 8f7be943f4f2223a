// Entry point: the library page at "/", the timeline at "/?trace=ID", the
// trace's query and info pages at "/?trace=ID&page=query|info", two traces
// compared at "/?page=compare&a=ID&b=ID", captures at "/?page=captures",
// a slice name across traces at "/?page=trends&name=NAME", one query over
// the library's traces at "/?page=query" (no trace).
import { CapturePage } from './capture.js';
import { ComparePage } from './compare.js';
import { InfoPage } from './info.js';
import { LibraryPage } from './library.js';
import { QueryPage } from './query.js';
import { TimelinePage } from './timeline.js';
import { TrendsPage } from './trends.js';

const params = new URLSearchParams(location.search);
const root = document.getElementById('app');
const trace = params.get('trace');

const page = params.get('page');

if (page === 'captures') {
  document.body.classList.add('page-captures');
  new CapturePage(root);
} else if (page === 'trends') {
  document.body.classList.add('page-trends');
  new TrendsPage(root, params);
} else if (page === 'compare') {
  document.body.classList.add('page-compare');
  new ComparePage(root, params);
} else if (trace && /^\d+$/.test(trace) && page === 'info') {
  document.body.classList.add('page-info');
  new InfoPage(root, trace);
} else if (trace && /^\d+$/.test(trace) && page === 'query') {
  document.body.classList.add('page-query');
  new QueryPage(root, trace, params);
} else if (page === 'query') {
  document.body.classList.add('page-query'); // over the library's traces
  new QueryPage(root, null, params);
} else if (trace && /^\d+$/.test(trace)) {
  document.body.classList.add('page-timeline');
  new TimelinePage(root, trace, params);
} else {
  document.body.classList.add('page-library');
  new LibraryPage(root);
}
