// Python sources compiled to bytecode by the browser's own Python: Pyodide, run here in Node.
//   node bytecode.mjs PYODIDE_DIR WORK_DIR '{"ARCHIVE": "WHERE", ...}'
// Rewrites each zip WORK_DIR/ARCHIVE in place, its members in order, compressed as they were, with fixed dates:
//   NAME.py   becomes NAME.pyc, compiled as WHERE + NAME.py (the path tracebacks show) with no source beside
//             it, so that Python loads it without compiling; a module Python carries frozen in is dropped
//   the rest  unchanged
// Line tables keep line numbers but not column ranges (PYTHONNODEBUGRANGES), as Python's -X no_debug_ranges.
import path from "node:path";
import { pathToFileURL } from "node:url";

const COMPILE = `
import _imp, json, zipfile
from importlib._bootstrap_external import _code_to_timestamp_pyc

FIXED_DATE = (1980, 1, 1, 0, 0, 0)


def module_name(member):  # "numpy/_core/__init__.py" -> "numpy._core"
    return member.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def bytecode(source, filename):
    code = compile(source, filename, "exec", dont_inherit=True)
    return bytes(_code_to_timestamp_pyc(code, 0, 0))  # timestamp 0: no source to compare it with


def rewrite(archive, where):
    with zipfile.ZipFile(archive) as src:
        members = [(info, src.read(info)) for info in src.infolist()]
    with zipfile.ZipFile(archive, "w") as dst:
        for info, data in members:
            name = info.filename
            if name.endswith(".py"):
                if _imp.is_frozen(module_name(name)):
                    continue
                data, name = bytecode(data, where + name), name + "c"
            member = zipfile.ZipInfo(name, FIXED_DATE)
            member.external_attr, member.compress_type = info.external_attr, info.compress_type
            dst.writestr(member, data)


for archive, where in json.loads(ARCHIVES).items():
    rewrite("/work/" + archive, where)
`;

const [pyodideDir, workDir, archives] = process.argv.slice(2);
const indexURL = `${path.resolve(pyodideDir)}/`;
const { loadPyodide } = await import(pathToFileURL(`${indexURL}pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL, env: { HOME: "/home/pyodide", PYTHONNODEBUGRANGES: "1" } });
pyodide.FS.mkdir("/work");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.resolve(workDir) }, "/work");
pyodide.globals.set("ARCHIVES", archives);
pyodide.runPython(COMPILE);
