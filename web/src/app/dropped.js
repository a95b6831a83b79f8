// The folder walk behind a drop (see files.rs).
// Called synchronously from the drop handler: the entries must be taken before it returns.
export function memlens_dropped(transfer) {
  const items = Array.from(transfer.items || []);
  const entries = items
    .map((item) => (item.kind === 'file' && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null))
    .filter(Boolean);
  if (!entries.some((e) => e.isDirectory)) {
    return Promise.resolve(Array.from(transfer.files || []).map((f) => [f.name, f]));
  }
  const out = [];
  const children = (dir) => new Promise((resolve, reject) => {
    const reader = dir.createReader();
    const all = [];
    const next = () => reader.readEntries((batch) => {
      if (batch.length === 0) { resolve(all); } else { all.push(...batch); next(); }
    }, reject);
    next();
  });
  const walk = async (entry, prefix) => {
    if (entry.name.startsWith('.')) return;
    const path = prefix + entry.name;
    if (entry.isFile) {
      out.push([path, await new Promise((resolve, reject) => entry.file(resolve, reject))]);
    } else if (entry.isDirectory) {
      const list = await children(entry);
      list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const child of list) await walk(child, path + '/');
    }
  };
  return (async () => {
    for (const entry of entries) await walk(entry, '');
    return out;
  })();
}
