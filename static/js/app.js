// Entry point: the library page at "/", the timeline at "/?trace=ID".
import { LibraryPage } from './library.js';
import { TimelinePage } from './timeline.js';

const params = new URLSearchParams(location.search);
const root = document.getElementById('app');
const trace = params.get('trace');

if (trace && /^\d+$/.test(trace)) {
  document.body.classList.add('page-timeline');
  new TimelinePage(root, trace, params);
} else {
  document.body.classList.add('page-library');
  new LibraryPage(root);
}
