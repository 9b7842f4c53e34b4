// The offline report's script: report.WriteHTML inlines it, with its data
// as JSON in the script element #data, into one page that needs no server
// and no network.
import React from 'react';
import { createRoot } from 'react-dom/client';
import 'uplot/dist/uPlot.min.css';
import '../style.css';
import { ReportPage } from './ReportPage';
import { decode } from '../tasks';

const data = JSON.parse(document.getElementById('data').textContent);
createRoot(document.getElementById('root')).render(<ReportPage rep={decode(data)} />);
