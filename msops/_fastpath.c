/* msops._fastpath: the eager call path of primitives and the collectives' kernels, in C.
 *
 * Each type exists in pure Python too (msops/primitives/primitive.py `_PyCall`,
 * msops/primitives/buffer_call.py `_py_buffer_call`, msops/primitives/gather_check.py
 * `_py_gather_check`) and behaves alike; this module only removes the interpreter's
 * per-call cost (an 8 B collective is a few microseconds, and every Python frame in front
 * of it is a noticeable part of that).
 *
 * FastCall: the base class of Primitive. `prim(*args)` compares the arguments with the
 * signature of the last call (set by Python through `_set_last` / `_set_last_with`):
 * on a match it calls that signature's lowered kernel and wraps the result in Tensors;
 * otherwise (or while a graph is traced) it calls the Python method `_call(*args)`.
 * A BufferCall kernel is run through its core, with no list or tuple made around x or
 * its output (the result is the same as calling it). An output that is the input's own
 * data is the input itself; an output the BufferCall holds comes back in a held result
 * (its Tensor and 1-tuple handed out again once nothing else refers to them: "results").
 *
 * BufferCall: `kernel(x)` = one mpi4py buffer method `method([x, *send_tail],
 * [out, *recv_tail], *extra)` into an output of a fixed shape and dtype. The output is the
 * last one again when nothing else refers to it ("held"), else a new array (or, for large
 * outputs, whatever `maker()` returns). An exception becomes `reraise(prim, exc)`'s.
 * A None tail drops that spec: no receive buffer (the result is x itself, as a broadcast's
 * root), or no send buffer (a broadcast's other ranks). `tupled`: x arrives in a list of
 * one and the result leaves in a 1-tuple (ops taking a tuple of tensors). `before`, when
 * not None, is called with no arguments ahead of the method (a check that must pass before
 * data moves, e.g. AllToAllV's count exchange); its exception goes through `reraise` too.
 *
 * GatherCheck: `check()` = `method(*args)`, which fills an int64 `table` (a small gather of
 * every rank's header), then passes iff table.flat[left[k]] == table.flat[right[k]] for every
 * k; otherwise it calls `mismatch()`, which raises the detailed error. The check of
 * AllToAllV's count matrix on every call, with no Python frame when it passes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>          /* T_OBJECT_EX: how Tensor's slots are stored */
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyTypeObject *tensor_type = NULL;   /* msops.Tensor */
static PyObject *type_of_np = NULL;        /* dict: numpy dtype -> msops Type */
static PyObject *wrap_all = NULL;          /* Python: (a kernel's result, first input) -> the call's */
static PyObject *empty_tuple = NULL;
static PyObject *str_data, *str_dtype, *str_call;
static int tracing = 0;
/* byte offsets of Tensor's `_data` and `_dtype` slots (its __slots__), read at setup */
static Py_ssize_t data_offset = 0, dtype_offset = 0;
/* the last dtype -> Type lookup of wrap_result (numpy's built-in dtypes are singletons) */
static PyObject *last_descr = NULL, *last_type = NULL;

#if PY_VERSION_HEX < 0x030C0000          /* the 3.12 exception API, on 3.10 and 3.11 */
static PyObject *
PyErr_GetRaisedException(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL)
        return NULL;
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL)
        PyException_SetTraceback(value, tb);
    Py_DECREF(type);
    Py_XDECREF(tb);
    return value;
}

static void
PyErr_SetRaisedException(PyObject *exc)
{
    PyObject *type = (PyObject *)Py_TYPE(exc);
    Py_INCREF(type);
    PyErr_Restore(type, exc, PyException_GetTraceback(exc));
}
#endif

/* -- Tensors ---------------------------------------------------------------------------- */

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* A new Tensor around `arr` (contiguous) of msops Type `type`: object.__new__, 2 slots set. */
static PyObject *
new_tensor(PyObject *arr, PyObject *type)
{
    PyObject *t = tensor_type->tp_new(tensor_type, empty_tuple, NULL);
    if (t == NULL)
        return NULL;
    Py_INCREF(arr);
    Py_XSETREF(SLOT(t, data_offset), arr);
    Py_INCREF(type);
    Py_XSETREF(SLOT(t, dtype_offset), type);
    return t;
}

/* (item,), stealing item; NULL (item released) when no tuple can be made. NULL in: NULL. */
static PyObject *
one_tuple(PyObject *item)
{
    if (item == NULL)
        return NULL;
    PyObject *one = PyTuple_New(1);
    if (one == NULL) {
        Py_DECREF(item);
        return NULL;
    }
    PyTuple_SET_ITEM(one, 0, item);
    return one;
}

/* The Type of `arr` when it is an exact, C-contiguous ndarray of a known dtype (borrowed);
 * else NULL, with an error set only if the lookup failed. */
static PyObject *
array_type(PyObject *arr)
{
    if (!PyArray_CheckExact(arr) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)arr))
        return NULL;
    PyObject *descr = (PyObject *)PyArray_DESCR((PyArrayObject *)arr);
    if (descr == last_descr)
        return last_type;
    PyObject *type = PyDict_GetItemWithError(type_of_np, descr);
    if (type != NULL) {
        Py_INCREF(descr);
        Py_XSETREF(last_descr, descr);
        Py_INCREF(type);
        Py_XSETREF(last_type, type);
    }
    return type;
}

/* `result` (stolen) as Tensors: a contiguous array of a known dtype here, the rest in Python
 * (`wrap_all(result, input)`, which also gives back `input` for its own data). */
static PyObject *
wrap_result(PyObject *result, PyObject *input)
{
    PyObject *type = array_type(result);
    if (type != NULL) {
        PyObject *t = new_tensor(result, type);
        Py_DECREF(result);
        return t;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(result);
        return NULL;
    }
    PyObject *wrapped = PyObject_CallFunctionObjArgs(wrap_all, result, input, NULL);
    Py_DECREF(result);
    return wrapped;
}

/* A Tensor's array (new reference) when `obj` is a Tensor holding an ndarray in its slot,
 * else NULL with no error set (a traced SymbolicTensor has none: the Python path tells). */
static PyObject *
tensor_array(PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, tensor_type))
        return NULL;
    PyObject *v = SLOT(obj, data_offset);
    if (v == NULL || !PyArray_Check(v))
        return NULL;
    Py_INCREF(v);
    return v;
}

/* -- signatures ------------------------------------------------------------------------- */

typedef struct {
    PyArray_Descr *descr;            /* NULL: no signature */
    int ndim;
    npy_intp dims[NPY_MAXDIMS];
} Signature;

static int
signature_set(Signature *sig, PyObject *shape, PyObject *dtype)
{
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrCheck(dtype)) {
        PyErr_SetString(PyExc_TypeError, "the signature's dtype should be a numpy dtype");
        return -1;
    }
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > NPY_MAXDIMS) {
        PyErr_SetString(PyExc_TypeError, "the signature's shape should be a tuple of ints");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        npy_intp d = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (d == -1 && PyErr_Occurred())
            return -1;
        sig->dims[i] = d;
    }
    descr = (PyArray_Descr *)dtype;
    Py_INCREF(descr);
    Py_XSETREF(sig->descr, descr);
    sig->ndim = (int)PyTuple_GET_SIZE(shape);
    return 0;
}

static inline int
signature_matches(const Signature *sig, PyArrayObject *v)
{
    return PyArray_DESCR(v) == sig->descr && PyArray_NDIM(v) == sig->ndim &&
           memcmp(PyArray_DIMS(v), sig->dims, sig->ndim * sizeof(npy_intp)) == 0;
}

/* BufferCall (below): FastCall calls its core directly, without a call's packing. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *method;                /* a bound mpi4py buffer method */
    PyObject *send_tail, *recv_tail; /* tuples: the send/receive spec after the array */
    PyObject *extra;                 /* tuple: arguments after the two specs */
    PyArray_Descr *descr;
    int ndim;
    npy_intp dims[NPY_MAXDIMS];
    PyObject *maker;                 /* None: hold the output; else () -> output array */
    PyObject *held;
    PyObject *prim, *reraise;
    int tupled;                      /* input: a list of one array; output: a 1-tuple */
    PyObject *before;                /* None, or () -> anything, run ahead of the method */
    PyObject *specs[2];              /* kept [None, *tail] spec lists (send, receive) */
    PyObject *weakrefs;
} BufferCall;
static PyTypeObject BufferCallType;
static PyObject *buffercall_run(BufferCall *self, PyObject *x);

/* -- FastCall ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    /* one Tensor */
    Signature sig;
    PyObject *kernel;
    PyObject *out_type;              /* Type of its single contiguous output, or NULL */
    /* a Tensor (or a 1-tuple of one) followed by constants */
    Signature wsig;
    PyObject *wkernel;
    PyObject *wrest;                 /* tuple of the constants */
    int wtupled;
    PyObject *held, *wheld;          /* each path's held result (see take_held), or NULL */
} FastCall;

static PyObject *
fastcall_slow(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *call = PyObject_GetAttr(self, str_call);
    if (call == NULL)
        return NULL;
    PyObject *result = PyObject_Call(call, args, kwargs);
    Py_DECREF(call);
    return result;
}

/* The kernel's result for one array v: a BufferCall's core at once, else a call. */
static PyObject *
run_kernel(PyObject *kernel, PyObject *v)
{
    if (Py_TYPE(kernel) == &BufferCallType && !((BufferCall *)kernel)->tupled)
        return buffercall_run((BufferCall *)kernel, v);
    return PyObject_CallOneArg(kernel, v);
}

/* -- results -------------------------------------------------------------------------------
 * An output that is the first input's own data is that input: its Tensor (exactly a
 * Tensor: a Parameter's data comes back as a new Tensor), or its tuple of Tensors. An
 * output the kernel holds (its last output, handed out again once nothing else refers to
 * it: a BufferCall's, AllToAllV's derived form's) comes back in a held result, handed out
 * again the same way: its Tensor and 1-tuple are made once, not every call. Holding them
 * keeps alive only what the kernel keeps alive anyway. */

/* 1 when `out` is `input`'s own data: its array (input exactly a Tensor), or the arrays of
 * its Tensors in order (input a tuple of exact Tensors). */
static int
is_input_data(PyObject *out, PyObject *input)
{
    if (Py_IS_TYPE(input, tensor_type))
        return out == SLOT(input, data_offset);
    if (!PyTuple_CheckExact(input) || !PyTuple_CheckExact(out) ||
            PyTuple_GET_SIZE(out) != PyTuple_GET_SIZE(input))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(out); i++) {
        PyObject *t = PyTuple_GET_ITEM(input, i);
        if (!Py_IS_TYPE(t, tensor_type) || PyTuple_GET_ITEM(out, i) != SLOT(t, data_offset))
            return 0;
    }
    return 1;
}

/* 1 when nobody left a mark on Tensor t that a reuse would show: a weak reference, or an
 * attribute in its __dict__ (tp_weaklistoffset also locates 3.12's managed weakref list). */
static int
unmarked(PyObject *t)
{
    Py_ssize_t w = Py_TYPE(t)->tp_weaklistoffset;
    if (w != 0 && *(PyObject **)((char *)t + w) != NULL)
        return 0;
    if (Py_TYPE(t)->tp_dictoffset == 0)
        return 1;
    PyObject *dict = PyObject_GenericGetDict(t, NULL);   /* (made empty once, then read) */
    if (dict == NULL) {
        PyErr_Clear();
        return 0;
    }
    int empty = PyDict_GET_SIZE(dict) == 0;
    Py_DECREF(dict);
    return empty;
}

/* The held result (a Tensor, or a 1-tuple of one), taken out of `*held` with its Tensor's
 * array let go (so the kernel may reuse that array), when nothing else refers to the
 * result or its Tensor and the Tensor is unmarked: a shell for this call's output. Else
 * NULL, and the held result let go. Taken out, not borrowed: a kernel calling this same
 * primitive again (re-entry) finds nothing held. */
static PyObject *
take_held(PyObject **held)
{
    PyObject *r = *held;
    if (r == NULL)
        return NULL;
    *held = NULL;
    PyObject *t = PyTuple_CheckExact(r) ? PyTuple_GET_ITEM(r, 0) : r;
    if (Py_REFCNT(r) == 1 && (t == r || Py_REFCNT(t) == 1) && unmarked(t)) {
        Py_CLEAR(SLOT(t, data_offset));
        return r;
    }
    Py_DECREF(r);
    return NULL;
}

/* `out` (stolen: an array of Type `type`) as a Tensor, in a 1-tuple if `tupled`: `shell`
 * (stolen, from take_held) refilled, else new; held again when something else (the
 * kernel) refers to `out` too, so that holding it keeps nothing alive. */
static PyObject *
array_result(PyObject **held, PyObject *shell, PyObject *out, PyObject *type, int tupled)
{
    int keep = Py_REFCNT(out) > 1;
    PyObject *r = shell;
    if (r != NULL && PyTuple_CheckExact(r) != tupled)
        Py_CLEAR(r);
    if (r != NULL) {
        PyObject *t = tupled ? PyTuple_GET_ITEM(r, 0) : r;
        SLOT(t, data_offset) = out;
        if (SLOT(t, dtype_offset) != type) {
            Py_INCREF(type);
            Py_XSETREF(SLOT(t, dtype_offset), type);
        }
    } else {
        r = new_tensor(out, type);
        Py_DECREF(out);
        if (tupled)
            r = one_tuple(r);
        if (r == NULL)
            return NULL;
    }
    if (keep) {
        Py_INCREF(r);
        Py_XSETREF(*held, r);
    }
    return r;
}

/* The call's result for the kernel's output `out` (stolen; NULL: the kernel failed) on v,
 * the array of the first argument `input` (of its one Tensor when `tupled`: the result is
 * then a 1-tuple too): `shell` (stolen, from take_held) refilled around an array, the input
 * itself for its own data, else new Tensors. `type`: out's Type when known, else NULL. */
static PyObject *
finish(PyObject **held, PyObject *shell, PyObject *out, PyObject *v, PyObject *input,
       int tupled, PyObject *type)
{
    if (out != NULL && out != v && (type == NULL || !PyArray_CheckExact(out)))
        type = array_type(out);
    if (out != NULL && out != v && type != NULL)
        return array_result(held, shell, out, type, tupled);
    Py_XSETREF(*held, shell);                   /* (unused: kept for the next call) */
    if (out == NULL || PyErr_Occurred()) {
        Py_XDECREF(out);
        return NULL;
    }
    if (is_input_data(out, tupled ? PyTuple_GET_ITEM(input, 0) : input)) {
        Py_DECREF(out);
        return Py_NewRef(input);
    }
    if (tupled)
        return one_tuple(wrap_result(out, Py_None));
    if (!PyTuple_CheckExact(out))
        return wrap_result(out, input);
    Py_ssize_t k = PyTuple_GET_SIZE(out);
    PyObject *ts = PyTuple_New(k);
    for (Py_ssize_t i = 0; ts != NULL && i < k; i++) {
        PyObject *t = wrap_result(Py_NewRef(PyTuple_GET_ITEM(out, i)), Py_None);
        if (t == NULL)
            Py_CLEAR(ts);
        else
            PyTuple_SET_ITEM(ts, i, t);
    }
    Py_DECREF(out);
    return ts;
}

static PyObject *
fastcall_one(FastCall *self, PyObject *input, PyObject *v)
{
    PyObject *shell = take_held(&self->held);
    PyObject *out = run_kernel(self->kernel, v);
    return finish(&self->held, shell, out, v, input, 0, self->out_type);
}

/* `input`: the first argument (a Tensor, or a 1-tuple of one when tupled). */
static PyObject *
fastcall_with(FastCall *self, PyObject *args, PyObject *input, PyObject *v)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *stack[16];
    if (n > 16)
        return NULL;
    PyObject *shell = take_held(&self->wheld), *out;
    if (Py_TYPE(self->wkernel) == &BufferCallType &&          /* (it ignores the constants) */
            ((BufferCall *)self->wkernel)->tupled == self->wtupled) {
        out = buffercall_run((BufferCall *)self->wkernel, v);
        return finish(&self->wheld, shell, out, v, input, self->wtupled, NULL);
    }
    PyObject *first = v;                        /* (a tupled kernel makes its own tuple) */
    if (self->wtupled && (first = PyList_New(1)) != NULL)
        PyList_SET_ITEM(first, 0, Py_NewRef(v));
    if (first == NULL) {
        Py_XDECREF(shell);
        return NULL;
    }
    stack[0] = first;
    for (Py_ssize_t i = 1; i < n; i++)
        stack[i] = PyTuple_GET_ITEM(args, i);
    out = PyObject_Vectorcall(self->wkernel, stack, n, NULL);
    if (self->wtupled)
        Py_DECREF(first);
    return finish(&self->wheld, shell, out, v, input, 0, NULL);
}

/* 1 when args[1:] equal the remembered constants, 0 when not, -1 on error */
static int
rest_matches(FastCall *self, PyObject *args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n - 1 != PyTuple_GET_SIZE(self->wrest) || n > 16)
        return 0;
    for (Py_ssize_t i = 1; i < n; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(args, i),
                                          PyTuple_GET_ITEM(self->wrest, i - 1), Py_EQ);
        if (eq <= 0)
            return eq;
    }
    return 1;
}

static PyObject *
fastcall_call(PyObject *op, PyObject *args, PyObject *kwargs)
{
    FastCall *self = (FastCall *)op;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (tracing || kwargs != NULL || n == 0)
        return fastcall_slow(op, args, kwargs);
    PyObject *first = PyTuple_GET_ITEM(args, 0);
    if (n == 1 && self->kernel != NULL) {
        PyObject *v = tensor_array(first);
        if (v != NULL) {
            if (signature_matches(&self->sig, (PyArrayObject *)v)) {
                PyObject *result = fastcall_one(self, first, v);
                Py_DECREF(v);
                return result;
            }
            Py_DECREF(v);
        }
    }
    if (self->wkernel != NULL) {
        PyObject *item = first;
        if (self->wtupled) {
            if (!PyTuple_CheckExact(first) || PyTuple_GET_SIZE(first) != 1)
                return fastcall_slow(op, args, kwargs);
            item = PyTuple_GET_ITEM(first, 0);
        }
        PyObject *v = tensor_array(item);
        if (v != NULL) {
            if (signature_matches(&self->wsig, (PyArrayObject *)v)) {
                int eq = rest_matches(self, args);
                if (eq < 0)                  /* uncomparable (an array): not this signature */
                    PyErr_Clear();
                if (eq > 0) {
                    PyObject *result = fastcall_with(self, args, first, v);
                    Py_DECREF(v);
                    if (result != NULL || PyErr_Occurred())
                        return result;
                    return fastcall_slow(op, args, kwargs);
                }
            }
            Py_DECREF(v);
        }
    }
    return fastcall_slow(op, args, kwargs);
}

static PyObject *
fastcall_set_last(FastCall *self, PyObject *args)
{
    PyObject *shape, *dtype, *kernel, *out_type;
    if (!PyArg_ParseTuple(args, "OOOO:_set_last", &shape, &dtype, &kernel, &out_type))
        return NULL;
    if (signature_set(&self->sig, shape, dtype) < 0)
        return NULL;
    Py_CLEAR(self->held);               /* (the last kernel's: may keep its output alive) */
    Py_INCREF(kernel);
    Py_XSETREF(self->kernel, kernel);
    if (out_type == Py_None) {
        Py_CLEAR(self->out_type);
    } else {
        Py_INCREF(out_type);
        Py_XSETREF(self->out_type, out_type);
    }
    Py_RETURN_NONE;
}

static PyObject *
fastcall_set_last_with(FastCall *self, PyObject *args)
{
    PyObject *shape, *dtype, *rest, *kernel;
    int tupled;
    if (!PyArg_ParseTuple(args, "OOpO!O:_set_last_with", &shape, &dtype, &tupled,
                          &PyTuple_Type, &rest, &kernel))
        return NULL;
    if (signature_set(&self->wsig, shape, dtype) < 0)
        return NULL;
    Py_CLEAR(self->wheld);
    self->wtupled = tupled;
    Py_INCREF(rest);
    Py_XSETREF(self->wrest, rest);
    Py_INCREF(kernel);
    Py_XSETREF(self->wkernel, kernel);
    Py_RETURN_NONE;
}

static int
fastcall_traverse(FastCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->kernel);
    Py_VISIT(self->out_type);
    Py_VISIT(self->wkernel);
    Py_VISIT(self->wrest);
    Py_VISIT(self->held);
    Py_VISIT(self->wheld);
    return 0;
}

static int
fastcall_clear(FastCall *self)
{
    Py_CLEAR(self->kernel);
    Py_CLEAR(self->out_type);
    Py_CLEAR(self->wkernel);
    Py_CLEAR(self->wrest);
    Py_CLEAR(self->held);
    Py_CLEAR(self->wheld);
    Py_CLEAR(self->sig.descr);
    Py_CLEAR(self->wsig.descr);
    return 0;
}

static void
fastcall_dealloc(FastCall *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    fastcall_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyMethodDef fastcall_methods[] = {
    {"_set_last", (PyCFunction)fastcall_set_last, METH_VARARGS,
     "_set_last(shape, dtype, kernel, out_type): the one-Tensor signature of the last call."},
    {"_set_last_with", (PyCFunction)fastcall_set_last_with, METH_VARARGS,
     "_set_last_with(shape, dtype, tupled, rest, kernel): the Tensor-and-constants one."},
    {NULL}
};

static PyTypeObject FastCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msops._fastpath.FastCall",
    .tp_doc = "Base of Primitive: calls with the last call's signature run its kernel at once.",
    .tp_basicsize = sizeof(FastCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_call = fastcall_call,
    .tp_traverse = (traverseproc)fastcall_traverse,
    .tp_clear = (inquiry)fastcall_clear,
    .tp_dealloc = (destructor)fastcall_dealloc,
    .tp_methods = fastcall_methods,
};

/* -- BufferCall ----------------------------------------------------------------------------- */

static PyObject *
list_spec(PyObject *array, PyObject *tail)
{
    Py_ssize_t k = PyTuple_GET_SIZE(tail);
    PyObject *spec = PyList_New(1 + k);
    if (spec == NULL)
        return NULL;
    Py_INCREF(array);
    PyList_SET_ITEM(spec, 0, array);
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *item = PyTuple_GET_ITEM(tail, i);
        Py_INCREF(item);
        PyList_SET_ITEM(spec, 1 + i, item);
    }
    return spec;
}

/* The spec [array, *tail] in the kept list `*kept` (made on first use): a list less to make
 * and free a call. Give it back with put_spec. */
static PyObject *
take_spec(PyObject **kept, PyObject *array, PyObject *tail)
{
    if (*kept == NULL && (*kept = list_spec(Py_None, tail)) == NULL)
        return NULL;
    if (Py_REFCNT(*kept) != 1)                  /* (only if someone reached into the kernel) */
        return list_spec(array, tail);
    PyObject *old = PyList_GET_ITEM(*kept, 0);
    Py_INCREF(array);
    PyList_SET_ITEM(*kept, 0, array);
    Py_DECREF(old);
    Py_INCREF(*kept);
    return *kept;
}

/* Done with `spec`. The kept list lets go of its array, which it must not keep alive; if
 * something else refers to the list now (a traceback's frame), the list is theirs: no
 * list is kept until the next call makes one. */
static void
put_spec(PyObject **kept, PyObject *spec)
{
    if (spec == *kept) {
        if (Py_REFCNT(spec) == 2) {
            PyObject *old = PyList_GET_ITEM(spec, 0);
            Py_INCREF(Py_None);
            PyList_SET_ITEM(spec, 0, Py_None);
            Py_DECREF(old);
        } else {
            Py_CLEAR(*kept);
        }
    }
    Py_DECREF(spec);
}

static PyObject *
buffercall_output(BufferCall *self)
{
    if (self->maker != Py_None)
        return PyObject_CallNoArgs(self->maker);
    if (self->held == NULL || Py_REFCNT(self->held) != 1) {   /* someone still holds it */
        Py_INCREF(self->descr);                                /* (PyArray_Empty steals it) */
        PyObject *out = PyArray_Empty(self->ndim, self->dims, self->descr, 0);
        if (out == NULL)
            return NULL;
        Py_XSETREF(self->held, out);
    }
    Py_INCREF(self->held);
    return self->held;
}

/* NULL, with the raised exception as `reraise(prim, exc)` leaves it. */
static PyObject *
buffercall_failed(BufferCall *self)
{
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *again = PyObject_CallFunctionObjArgs(self->reraise, self->prim, exc, NULL);
    if (again != NULL) {                     /* reraise returned: raise the original */
        Py_DECREF(again);
        PyErr_SetRaisedException(exc);
    } else {
        Py_DECREF(exc);
    }
    return NULL;
}

/* The call itself: the output array (new reference) for the input array x. */
static PyObject *
buffercall_run(BufferCall *self, PyObject *x)
{
    PyObject *out, *stack[8];
    Py_ssize_t n = 0;
    if (self->before != NULL && self->before != Py_None) {
        PyObject *done = PyObject_CallNoArgs(self->before);
        if (done == NULL)
            return buffercall_failed(self);
        Py_DECREF(done);
    }
    if (self->recv_tail == Py_None) {       /* no receive buffer: the result is x itself */
        Py_INCREF(x);
        out = x;
    } else if ((out = buffercall_output(self)) == NULL) {
        return NULL;
    }
    PyObject *tails[2] = {self->send_tail, self->recv_tail}, *arrays[2] = {x, out};
    PyObject *specs[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        if (tails[i] == Py_None)
            continue;
        if ((specs[i] = take_spec(&self->specs[i], arrays[i], tails[i])) == NULL) {
            if (i == 1 && specs[0] != NULL)
                put_spec(&self->specs[0], specs[0]);
            Py_DECREF(out);
            return NULL;
        }
        stack[n++] = specs[i];
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->extra); i++)
        stack[n++] = PyTuple_GET_ITEM(self->extra, i);
    PyObject *res = PyObject_Vectorcall(self->method, stack, n, NULL);
    for (int i = 0; i < 2; i++)
        if (specs[i] != NULL)
            put_spec(&self->specs[i], specs[i]);
    if (res == NULL) {
        Py_DECREF(out);
        return buffercall_failed(self);
    }
    Py_DECREF(res);
    return out;
}

static PyObject *
buffercall_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    BufferCall *self = (BufferCall *)op;
    if (kwnames != NULL || PyVectorcall_NARGS(nargsf) < 1) {
        PyErr_SetString(PyExc_TypeError, "a buffer-call kernel takes its input array");
        return NULL;
    }
    PyObject *x = args[0];                  /* further arguments (constants) are ignored */
    if (self->tupled) {                     /* a list (or tuple) of one array */
        if (PyList_Check(x) && PyList_GET_SIZE(x) == 1)
            x = PyList_GET_ITEM(x, 0);
        else if (PyTuple_Check(x) && PyTuple_GET_SIZE(x) == 1)
            x = PyTuple_GET_ITEM(x, 0);
        else {
            PyErr_SetString(PyExc_TypeError, "this buffer-call kernel takes a list of one array");
            return NULL;
        }
    }
    PyObject *out = buffercall_run(self, x);
    return self->tupled ? one_tuple(out) : out;
}

static int
buffercall_init(BufferCall *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"method", "send_tail", "recv_tail", "extra", "shape", "dtype",
                            "maker", "prim", "reraise", "tupled", "before", NULL};
    PyObject *method, *send_tail, *recv_tail, *extra, *shape, *dtype, *maker, *prim, *reraise;
    PyObject *before = Py_None;
    int tupled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO!O!OOOO|pO:BufferCall", names,
                                     &method, &send_tail, &recv_tail, &PyTuple_Type, &extra,
                                     &PyTuple_Type, &shape, &dtype, &maker, &prim, &reraise,
                                     &tupled, &before))
        return -1;
    if (before != Py_None && !PyCallable_Check(before)) {
        PyErr_SetString(PyExc_TypeError, "before should be None or a callable");
        return -1;
    }
    if ((send_tail != Py_None && !PyTuple_Check(send_tail)) ||
            (recv_tail != Py_None && !PyTuple_Check(recv_tail)) ||
            (send_tail == Py_None && recv_tail == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "send_tail and recv_tail should be tuples (one may be None)");
        return -1;
    }
    if (PyTuple_GET_SIZE(extra) > 6) {              /* (the specs and these fill stack[8]) */
        PyErr_SetString(PyExc_ValueError, "at most 6 extra arguments");
        return -1;
    }
    Signature sig = {NULL};
    if (signature_set(&sig, shape, dtype) < 0)
        return -1;
    Py_XSETREF(self->descr, sig.descr);
    self->ndim = sig.ndim;
    memcpy(self->dims, sig.dims, sizeof(sig.dims));
#define SET(field, value) do { Py_INCREF(value); Py_XSETREF(self->field, value); } while (0)
    SET(method, method);
    SET(send_tail, send_tail);
    SET(recv_tail, recv_tail);
    SET(extra, extra);
    SET(maker, maker);
    SET(prim, prim);
    SET(reraise, reraise);
    SET(before, before);
#undef SET
    Py_CLEAR(self->held);
    self->tupled = tupled;
    Py_CLEAR(self->specs[0]);
    Py_CLEAR(self->specs[1]);
    self->vectorcall = buffercall_vectorcall;
    return 0;
}

static int
buffercall_traverse(BufferCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->method);
    Py_VISIT(self->send_tail);
    Py_VISIT(self->recv_tail);
    Py_VISIT(self->extra);
    Py_VISIT(self->maker);
    Py_VISIT(self->held);
    Py_VISIT(self->prim);
    Py_VISIT(self->reraise);
    Py_VISIT(self->before);
    Py_VISIT(self->specs[0]);
    Py_VISIT(self->specs[1]);
    return 0;
}

static int
buffercall_clear(BufferCall *self)
{
    Py_CLEAR(self->method);
    Py_CLEAR(self->send_tail);
    Py_CLEAR(self->recv_tail);
    Py_CLEAR(self->extra);
    Py_CLEAR(self->maker);
    Py_CLEAR(self->held);
    Py_CLEAR(self->prim);
    Py_CLEAR(self->reraise);
    Py_CLEAR(self->before);
    Py_CLEAR(self->descr);
    Py_CLEAR(self->specs[0]);
    Py_CLEAR(self->specs[1]);
    return 0;
}

static void
buffercall_dealloc(BufferCall *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    buffercall_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject BufferCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msops._fastpath.BufferCall",
    .tp_doc = "BufferCall(method, send_tail, recv_tail, extra, shape, dtype, maker, prim, "
              "reraise, tupled=False, before=None): kernel(x) -> before(); "
              "method([x, *send_tail], [out, *recv_tail], *extra); out.",
    .tp_basicsize = sizeof(BufferCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)buffercall_init,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(BufferCall, vectorcall),
    .tp_traverse = (traverseproc)buffercall_traverse,
    .tp_clear = (inquiry)buffercall_clear,
    .tp_dealloc = (destructor)buffercall_dealloc,
    .tp_weaklistoffset = offsetof(BufferCall, weakrefs),
};

/* -- GatherCheck ---------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *method, *args;         /* the gather: method(*args) */
    PyObject *table, *left, *right;  /* int64 table; intp indices into its flat data */
    PyObject *mismatch;              /* () -> raises */
    const npy_int64 *cells;
    const npy_intp *lhs, *rhs;
    Py_ssize_t pairs;
} GatherCheck;

static PyObject *
gathercheck_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    GatherCheck *self = (GatherCheck *)op;
    if (kwnames != NULL || PyVectorcall_NARGS(nargsf) != 0) {
        PyErr_SetString(PyExc_TypeError, "a gather check takes no arguments");
        return NULL;
    }
    PyObject *done = PyObject_Vectorcall(self->method, PySequence_Fast_ITEMS(self->args),
                                         PyTuple_GET_SIZE(self->args), NULL);
    if (done == NULL)
        return NULL;
    Py_DECREF(done);
    for (Py_ssize_t k = 0; k < self->pairs; k++) {
        if (self->cells[self->lhs[k]] != self->cells[self->rhs[k]]) {
            PyObject *res = PyObject_CallNoArgs(self->mismatch);
            if (res != NULL) {
                Py_DECREF(res);
                PyErr_SetString(PyExc_RuntimeError, "a gather check's mismatch() should raise");
            }
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* 0 if `a` is an aligned C-contiguous array of `type` (the check reads it raw), else -1. */
static int
gathercheck_array(PyObject *a, int type, const char *name)
{
    if (!PyArray_Check(a) || PyArray_TYPE((PyArrayObject *)a) != type ||
            !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) ||
            !PyArray_ISALIGNED((PyArrayObject *)a)) {
        PyErr_Format(PyExc_TypeError, "%s should be an aligned C-contiguous %s array", name,
                     type == NPY_INT64 ? "int64" : "intp");
        return -1;
    }
    return 0;
}

static int
gathercheck_init(GatherCheck *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"method", "args", "table", "left", "right", "mismatch", NULL};
    PyObject *method, *margs, *table, *left, *right, *mismatch;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OOOO:GatherCheck", names, &method,
                                     &PyTuple_Type, &margs, &table, &left, &right, &mismatch))
        return -1;
    if (gathercheck_array(table, NPY_INT64, "table") < 0 ||
            gathercheck_array(left, NPY_INTP, "left") < 0 ||
            gathercheck_array(right, NPY_INTP, "right") < 0)
        return -1;
    Py_ssize_t pairs = PyArray_SIZE((PyArrayObject *)left);
    if (PyArray_SIZE((PyArrayObject *)right) != pairs) {
        PyErr_SetString(PyExc_ValueError, "left and right should have the same size");
        return -1;
    }
    npy_intp size = PyArray_SIZE((PyArrayObject *)table);
    const npy_intp *idx[2] = {PyArray_DATA((PyArrayObject *)left),
                              PyArray_DATA((PyArrayObject *)right)};
    for (int s = 0; s < 2; s++)
        for (Py_ssize_t k = 0; k < pairs; k++)
            if (idx[s][k] < 0 || idx[s][k] >= size) {
                PyErr_Format(PyExc_IndexError, "%s[%zd] = %zd is outside the table of %zd cells",
                             s ? "right" : "left", k, (Py_ssize_t)idx[s][k], (Py_ssize_t)size);
                return -1;
            }
    if (!PyCallable_Check(method) || !PyCallable_Check(mismatch)) {
        PyErr_SetString(PyExc_TypeError, "method and mismatch should be callables");
        return -1;
    }
#define SET(field, value) do { Py_INCREF(value); Py_XSETREF(self->field, value); } while (0)
    SET(method, method);
    SET(args, margs);
    SET(table, table);
    SET(left, left);
    SET(right, right);
    SET(mismatch, mismatch);
#undef SET
    self->cells = PyArray_DATA((PyArrayObject *)table);
    self->lhs = idx[0];
    self->rhs = idx[1];
    self->pairs = pairs;
    self->vectorcall = gathercheck_vectorcall;
    return 0;
}

static int
gathercheck_traverse(GatherCheck *self, visitproc visit, void *arg)
{
    Py_VISIT(self->method);
    Py_VISIT(self->args);
    Py_VISIT(self->table);
    Py_VISIT(self->left);
    Py_VISIT(self->right);
    Py_VISIT(self->mismatch);
    return 0;
}

static int
gathercheck_clear(GatherCheck *self)
{
    Py_CLEAR(self->method);
    Py_CLEAR(self->args);
    Py_CLEAR(self->table);
    Py_CLEAR(self->left);
    Py_CLEAR(self->right);
    Py_CLEAR(self->mismatch);
    self->pairs = 0;                 /* (a cleared check reads nothing) */
    return 0;
}

static void
gathercheck_dealloc(GatherCheck *self)
{
    PyObject_GC_UnTrack(self);
    gathercheck_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject GatherCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "msops._fastpath.GatherCheck",
    .tp_doc = "GatherCheck(method, args, table, left, right, mismatch): check() -> "
              "method(*args); mismatch() unless table.flat[left] == table.flat[right].",
    .tp_basicsize = sizeof(GatherCheck),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)gathercheck_init,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(GatherCheck, vectorcall),
    .tp_traverse = (traverseproc)gathercheck_traverse,
    .tp_clear = (inquiry)gathercheck_clear,
    .tp_dealloc = (destructor)gathercheck_dealloc,
};

/* -- the module ------------------------------------------------------------------------------ */

static PyObject *
setup(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *tensor, *types, *wrap;
    if (!PyArg_ParseTuple(args, "O!O!O:setup", &PyType_Type, &tensor, &PyDict_Type, &types,
                          &wrap))
        return NULL;
    Py_ssize_t offsets[2];
    PyObject *names[2] = {str_data, str_dtype};
    for (int i = 0; i < 2; i++) {
        PyObject *d = PyDict_GetItemWithError(((PyTypeObject *)tensor)->tp_dict, names[i]);
        if (d == NULL || !PyObject_TypeCheck(d, &PyMemberDescr_Type) ||
                ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "Tensor.%U should be a __slots__ slot", names[i]);
            return NULL;
        }
        offsets[i] = ((PyMemberDescrObject *)d)->d_member->offset;
    }
    data_offset = offsets[0];
    dtype_offset = offsets[1];
    Py_INCREF(tensor);
    Py_XSETREF(tensor_type, (PyTypeObject *)tensor);
    Py_INCREF(types);
    Py_XSETREF(type_of_np, types);
    Py_INCREF(wrap);
    Py_XSETREF(wrap_all, wrap);
    Py_RETURN_NONE;
}

static PyObject *
set_tracing(PyObject *Py_UNUSED(module), PyObject *flag)
{
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    tracing = on;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(Tensor, numpy dtype -> Type dict, results): what results become."},
    {"set_tracing", set_tracing, METH_O,
     "set_tracing(flag): while true, every call takes the Python path (the tracer's hook)."},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "msops._fastpath",
    "The eager call path of primitives and the collectives' kernels, in C.",
    -1, module_methods,
};

PyMODINIT_FUNC
PyInit__fastpath(void)
{
    import_array();
    if (PyType_Ready(&FastCallType) < 0 || PyType_Ready(&BufferCallType) < 0 ||
            PyType_Ready(&GatherCheckType) < 0)
        return NULL;
    empty_tuple = PyTuple_New(0);
    str_data = PyUnicode_InternFromString("_data");
    str_dtype = PyUnicode_InternFromString("_dtype");
    str_call = PyUnicode_InternFromString("_call");
    if (!empty_tuple || !str_data || !str_dtype || !str_call)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FastCallType);
    Py_INCREF(&BufferCallType);
    Py_INCREF(&GatherCheckType);
    if (PyModule_AddObject(m, "FastCall", (PyObject *)&FastCallType) < 0 ||
            PyModule_AddObject(m, "BufferCall", (PyObject *)&BufferCallType) < 0 ||
            PyModule_AddObject(m, "GatherCheck", (PyObject *)&GatherCheckType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
