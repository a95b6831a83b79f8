// The File System Access API calls behind Follow… (see live.rs).
export function memlens_can_follow() {
  return typeof globalThis.showOpenFilePicker === 'function';
}
export function memlens_pick_file() {
  return globalThis.showOpenFilePicker({ multiple: false }).then((handles) => handles[0]);
}
export function memlens_file_of(handle) {
  return handle.getFile();
}
