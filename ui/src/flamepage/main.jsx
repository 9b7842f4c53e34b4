// The offline flame graph page's script: flamegraph.HTML inlines it, with
// the profile as JSON in the script element #data, into one page that
// needs no server and no network.
import React from 'react';
import { createRoot } from 'react-dom/client';
import '../style.css';
import { FlamePage } from './FlamePage';

const data = JSON.parse(document.getElementById('data').textContent);
createRoot(document.getElementById('root')).render(<FlamePage d={data} />);
