# bash completion for bloomkit(1): commands, options and filter types.
# The lists come from the bloomkit being completed (its --help texts), so they follow its version.
# Installed as share/bash-completion/completions/bloomkit (loaded on demand by bash-completion).

# Prints the commands, the filter types, or a command's options, from bloomkit's own help.
_bloomkit_commands() {
    "$1" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on && !/^  / { on = 0 }'
}
_bloomkit_types() {
    "$1" --help 2>/dev/null | sed -n 's/^Filter types (--type): \(.*\) (default.*/\1/p' | tr -d ',' | tr ' ' '\n'
}
_bloomkit_options() {
    "$1" "$2" --help 2>/dev/null | grep -E '^ +-' | grep -oE '(^|[ ,])--?[A-Za-z0-9][A-Za-z0-9-]*' | tr -d ' ,' | sort -u
}

_bloomkit() {
    local cur prev bk cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=
    [ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
    bk=${COMP_WORDS[0]}
    command -v "$bk" >/dev/null 2>&1 || bk=bloomkit
    COMPREPLY=()
    if [ "$COMP_CWORD" -le 1 ]; then
        COMPREPLY=($(compgen -W "$(_bloomkit_commands "$bk") help --help --version" -- "$cur"))
        return 0
    fi
    cmd=${COMP_WORDS[1]}
    case $cmd in
    help)
        COMPREPLY=($(compgen -W "$(_bloomkit_commands "$bk")" -- "$cur"))
        return 0
        ;;
    esac
    case $prev in
    -t | --type)
        COMPREPLY=($(compgen -W "$(_bloomkit_types "$bk")" -- "$cur"))
        return 0
        ;;
    -n | --keys | -p | --fpr | --seed | --counter-bits | --growth | --ratio | --fingerprint-bits | \
        --bucket-size | --max-kicks | --expansion | --block-bits | --window | --doublings | -k | --top | --width | --depth | --decay | -e | --error | -d | --prob)
        return 0 # a value: nothing to offer
        ;;
    esac
    # after "--" only operands
    for ((i = 2; i < COMP_CWORD; i++)); do
        [ "${COMP_WORDS[i]}" = "--" ] && { COMPREPLY=($(compgen -f -- "$cur")); return 0; }
    done
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_bloomkit_options "$bk" "$cmd")" -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
    compopt -o filenames 2>/dev/null
    return 0
}
complete -F _bloomkit bloomkit
