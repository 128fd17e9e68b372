import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import './styles.css';
import { App } from './app';
import { applyTheme } from './theme';

applyTheme();
render(<App />, document.getElementById('app')!);
