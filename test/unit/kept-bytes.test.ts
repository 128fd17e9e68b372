// KeptBytes: what the stream watchers keep for a local count. Every byte appended must read back
// in order however often the buffer grew, whatever the source buffer holds afterwards.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeptBytes } from '../../src/formats/kept-bytes';

test('bytes read back in order across growth, past the bound too', () => {
  const kept = new KeptBytes(1500);
  const expected: Buffer[] = [];
  for (let index = 0; index < 400; index += 1) {
    const text = index % 3 === 0 ? `模块${index}→` : `piece ${index} `;
    if (index % 2 === 0) {
      const source = Buffer.from(`xx${text}yy`);
      kept.append(source, 2, source.length - 2);
      source.fill(0);   // the source is reused by its owner: what was kept is a copy
    } else {
      kept.append(Buffer.from(text));
    }
    expected.push(Buffer.from(text));
  }
  const all = Buffer.concat(expected);
  assert.ok(all.length > 1500 * 2, 'the kept bytes pass the bound by far');
  assert.equal(kept.length, all.length);
  assert.equal(kept.toString('latin1'), all.toString('latin1'));
  assert.equal(kept.toString('utf8', 0, Buffer.byteLength('模块0→')), '模块0→');
});

test('records (a length, then bytes or text) read back one by one across growth, empty ones too', () => {
  const kept = new KeptBytes(1500);
  const texts: string[] = [];
  for (let index = 0; index < 400; index += 1) {
    const text = index % 7 === 0 ? '' : index % 3 === 0 ? `模块${index}→` : `piece ${index} `;
    if (index % 2 === 0) {
      const source = Buffer.from(`xx${text}yy`);
      kept.appendRecord(source, 2, source.length - 2);
      source.fill(0);
    } else {
      kept.appendTextRecord(text);
    }
    texts.push(text);
  }
  const read: string[] = [];
  for (let at = 0; at < kept.length;) {
    const end = at + 4 + kept.recordLength(at);
    read.push(kept.toString('utf8', at + 4, end));
    at = end;
  }
  assert.deepEqual(read, texts);
  assert.equal(kept.length, texts.reduce((sum, text) => sum + 4 + Buffer.byteLength(text), 0));
});

test('clear drops everything; appending starts again', () => {
  const kept = new KeptBytes(1024);
  kept.append(Buffer.from('a'.repeat(2000)));
  kept.clear();
  assert.equal(kept.length, 0);
  assert.equal(kept.toString('latin1'), '');
  kept.append(Buffer.from('again'));
  assert.equal(kept.toString('utf8'), 'again');
});
