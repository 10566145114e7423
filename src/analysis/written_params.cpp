#include "analysis/written_params.h"

#include "analysis/var_uses.h"

namespace plait::analysis {

std::vector<bool> written_parameters(const ir::Function& function) {
  const VarUses uses = uses_of(function.body);
  ir::ArraySet written = uses.arrays_written;
  // A binding chain (`u = a; w = u; w[0] = 1`) writes through every link.
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [dst, src] : uses.views) {
      if (written.count(dst) > 0 && written.insert(src).second) grew = true;
    }
  }
  // A pass that copies an array's info keeps is_param and the name, so a
  // written copy of a parameter counts as the parameter.
  std::vector<bool> out;
  out.reserve(function.params.size());
  for (const ir::Param& param : function.params) {
    bool param_written = false;
    for (const ir::ArrayInfo* array : written) {
      if (param.array && (array == param.array.get() || (array->is_param && array->name == param.array->name)))
        param_written = true;
    }
    out.push_back(param_written);
  }
  return out;
}

}  // namespace plait::analysis
