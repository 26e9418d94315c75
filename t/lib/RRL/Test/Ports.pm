package RRL::Test::Ports;

# free_port(): a loopback port nobody listens on now (the kernel's choice,
# so test files run in parallel), never the same one twice in a test file:
# the kernel may hand a port just closed out again, and two servers of one
# instance would share it, nor one another test file holds (claim_port()).
# RRL::Test imports both (RRL::Test::free_port, RRL::Test::claim_port).

use strict;
use warnings;

use Carp qw(croak);
use Exporter qw(import);
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use File::Spec;
use IO::Socket::INET;

use RRL::Test::Env qw(read_file);

our @EXPORT_OK = qw(free_port claim_port);

my %given;

sub free_port {
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
            Proto => 'tcp', Listen => 1, ReuseAddr => 1)
            or croak "cannot bind a free port: $!";
        my $port = $s->sockport;
        close $s;
        next if $given{$port}++;
        next unless claim_port($port);
        return $port;
    }
    croak 'no free port not given already';
}

# Nor one that another test file holds: files run in parallel
# (scripts/e2e.sh), and a port is free between free_port() and its
# server's start, or while a test keeps its Redis stopped, or for good
# when it is a dead address: the kernel could hand it to another file. A
# file claims each port it is given in a directory that every file shares,
# until it ends; a claim whose process is gone is stale and taken over.

my $claims = File::Spec->catdir(File::Spec->tmpdir, 'rrl-test-ports');
my (@claimed, $claimer);

sub claim_port {
    my ($port) = @_;
    chmod 01777, $claims if mkdir $claims;    # every user's files
    my $f = "$claims/$port";
    for (1 .. 2) {
        if (sysopen(my $fh, $f, O_WRONLY | O_CREAT | O_EXCL, 0666)) {
            print $fh $$;
            close $fh;
            $claimer //= $$;
            push @claimed, $f;
            return 1;
        }
        my $pid = read_file($f);
        return 0 if $pid =~ /\A\d+\z/
            && ($pid == $$ || kill(0, $pid) || $!{EPERM});
        unlink $f;    # stale, or half written: once more
    }
    return 0;
}

END {
    unlink @claimed if defined $claimer && $claimer == $$;
}

1;
