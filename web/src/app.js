// app.js - the dashboard's own logic (placeholder until the UI lands).
import { select } from 'd3-selection';
select('#app').text('flamed');
