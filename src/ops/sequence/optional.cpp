// ai.onnx optionals: Optional (15), OptionalHasElement (15, 18), OptionalGetElement (15, 18).
// Optional-15 wraps its input, or, without one, makes an empty optional of the type given by the 'type'
// attribute. Version 15 of OptionalHasElement/OptionalGetElement takes only optional inputs; version 18 also
// accepts plain tensors and sequences (which "have" an element: HasElement gives true, GetElement returns them as
// they are) and makes OptionalHasElement's input optional (absent: false). Getting the element of an empty optional
// is an error. Element types: the IR-3 tensor types in version 15, the IR-4 ones (with bfloat16) in version 18.
#include "ops/op_kit.hpp"

namespace onyx::ops {
namespace {


// The type a datum's element is recorded with (shapes of tensors left out: they vary between values).
Type elem_type_of(const Datum& d) {
  if (d.is_tensor()) return Type::tensor(d.tensor.dtype());
  return d.type();
}

void add_optional(Registry& r) {
  auto type_attr = [](const AttributeView& attrs) -> std::optional<Type> {
    const Attribute* a = attrs.find("type");
    if (!a) return std::nullopt;
    if (a->type != AttributeType::TypeProto || !a->tp)
      fail("attribute 'type' is ", attribute_type_name(a->type), ", expected ", attribute_type_name(AttributeType::TypeProto));
    if (a->tp->kind != Type::Kind::Tensor && a->tp->kind != Type::Kind::Sequence)
      fail("attribute 'type' is ", a->tp->to_string(), "; an optional holds a tensor or a sequence");
    return *a->tp;
  };
  auto infer = [type_attr](InferContext& ctx) {
    std::optional<Type> t = type_attr(ctx.attrs);
    if (ctx.has_input(0)) {
      const Type& in = ctx.input_type(0);
      if (in.kind != Type::Kind::Tensor && in.kind != Type::Kind::Sequence && in.kind != Type::Kind::Unknown)
        ctx.error(cat("input is ", in.to_string(), "; an optional holds a tensor or a sequence"));
      if (t && in.kind != Type::Kind::Unknown) merge_types(*t, in, "the input and attribute 'type'");
      ctx.set_output(0, optional_type(in.kind == Type::Kind::Unknown && t ? *t : in));
      return;
    }
    if (!t) ctx.error("Optional needs an input or the 'type' attribute");
    ctx.set_output(0, optional_type(*t));
  };
  auto kernel = [type_attr](const KernelInit& init) {
    std::optional<Type> t = type_attr(init.attrs);
    return make_kernel([t](KernelContext& ctx) {
      if (ctx.has_input(0)) {
        const Datum& d = ctx.input_datum(0);
        if (d.kind != Datum::Kind::Tensor && d.kind != Datum::Kind::Sequence)
          ctx.error(cat("input is ", d.describe(), "; an optional holds a tensor or a sequence"));
        ctx.set_output(0, Datum::optional(d, elem_type_of(d)));
        return;
      }
      if (!t) ctx.error("Optional needs an input or the 'type' attribute");
      ctx.set_output(0, Datum::optional(std::nullopt, *t));
    });
  };
  add_versions(r, "", "Optional", {15}, {{{0}, all_tensor_types(11)}}, infer, kernel);
}

void add_has_element(Registry& r) {
  auto infer_for = [](int since) {
    return [since](InferContext& ctx) {
      if (ctx.has_input(0)) {
        const Type& t = ctx.input_type(0);
        bool ok = t.kind == Type::Kind::Optional || t.kind == Type::Kind::Unknown ||
                  (since >= 18 && (t.kind == Type::Kind::Tensor || t.kind == Type::Kind::Sequence));
        if (!ok) ctx.error(cat("input is ", t.to_string(), since >= 18 ? ", expected an optional, a tensor or a sequence"
                                                                      : ", expected an optional (tensors and sequences need opset 18)"));
      } else if (since < 18) {
        ctx.error("input 0 is missing (it is optional from opset 18)");
      }
      ctx.set_output(0, scalar_type(DataType::Bool));
    };
  };
  auto kernel_for = [](int since) {
    return [since](const KernelInit&) {
      return make_kernel([since](KernelContext& ctx) {
        bool has = false;
        if (ctx.has_input(0)) {
          const Datum& d = ctx.input_datum(0);
          if (d.kind == Datum::Kind::Optional) has = !d.elements.empty();
          else if (since >= 18 && (d.kind == Datum::Kind::Tensor || d.kind == Datum::Kind::Sequence)) has = true;
          else ctx.error(cat("input is ", d.describe(), ", expected an optional"));
        } else if (since < 18) {
          ctx.error("input 0 is missing (it is optional from opset 18)");
        }
        ctx.set_output(0, make_scalar_bool(has));
      });
    };
  };
  add_versions(r, "", "OptionalHasElement", {15}, {}, infer_for(15), kernel_for(15));
  add_versions(r, "", "OptionalHasElement", {18}, {{{0}, all_tensor_types(18)}}, infer_for(18), kernel_for(18));
}

void add_get_element(Registry& r) {
  auto infer_for = [](int since) {
    return [since](InferContext& ctx) {
      const Type& t = ctx.input_type(0);
      if (t.kind == Type::Kind::Optional) {
        ctx.set_output(0, t.inner ? *t.inner : Type{});
      } else if (since >= 18 && (t.kind == Type::Kind::Tensor || t.kind == Type::Kind::Sequence)) {
        ctx.set_output(0, t);
      } else if (t.kind != Type::Kind::Unknown) {
        ctx.error(cat("input is ", t.to_string(), since >= 18 ? ", expected an optional, a tensor or a sequence"
                                                             : ", expected an optional (tensors and sequences need opset 18)"));
      }
    };
  };
  auto kernel_for = [](int since) {
    return [since](const KernelInit&) {
      return make_kernel([since](KernelContext& ctx) {
        const Datum& d = ctx.input_datum(0);
        if (d.kind == Datum::Kind::Optional) {
          if (d.elements.empty()) ctx.error("the optional input is empty");
          ctx.set_output(0, d.elements[0]);
        } else if (since >= 18 && (d.kind == Datum::Kind::Tensor || d.kind == Datum::Kind::Sequence)) {
          ctx.set_output(0, d);
        } else {
          ctx.error(cat("input is ", d.describe(), ", expected an optional"));
        }
      });
    };
  };
  add_versions(r, "", "OptionalGetElement", {15}, {}, infer_for(15), kernel_for(15));
  add_versions(r, "", "OptionalGetElement", {18}, {{{0}, all_tensor_types(18)}}, infer_for(18), kernel_for(18));
}

}  // namespace

void register_optional(Registry& r) {
  add_optional(r);
  add_has_element(r);
  add_get_element(r);
}

}  // namespace onyx::ops
